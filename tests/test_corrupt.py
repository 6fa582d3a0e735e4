"""The corpus of damaged captures: frames before the damage come out, then a clean stop or resume."""

import os

import pytest
from conftest import ROOT, jsonl, run_cli

CORRUPT = os.path.join(ROOT, "tests", "corrupt")

# file: (frames reported, exit code, reason on stderr or finding code on a frame)
EXPECTED = {
    "bad-magic.pcap": (0, 2, "not a pcap or pcapng file"),
    "truncated-header.pcap": (0, 2, "pcap file header cut short"),
    "empty.pcap": (0, 2, "too short for a header"),
    "text.pcap": (0, 2, "not a pcap or pcapng file"),
    "record-header-cut.pcap": (2, 2, "record 3 header cut short"),
    "record-cut-short.pcap": (2, 2, "record 3 cut short"),
    "huge-record-length.pcap": (1, 2, "claims 4294967280 captured bytes"),
    "caplen-over-snaplen.pcap": (3, 0, "capture.corrupt"),
    "zero-length-records.pcap": (5, 0, None),
    "time-backwards.pcap": (3, 0, "capture.time_backwards"),
    "pcapng-inconsistent-lengths.pcapng": (1, 2, "inconsistent lengths"),
    "pcapng-block-cut-short.pcapng": (2, 2, "cut short"),
    "pcapng-huge-block-length.pcapng": (2, 2, "impossible length"),
    "pcapng-bad-byte-order.pcapng": (0, 2, "bad byte-order magic"),
    "pcapng-unknown-block.pcapng": (3, 0, None),
    "pcapng-interface-out-of-range.pcapng": (3, 0, "capture.corrupt"),
    "pcapng-no-interface.pcapng": (3, 0, "capture.corrupt"),
    "pcapng-option-overrun.pcapng": (3, 0, "capture.corrupt"),
}


def test_the_corpus_is_complete():
    assert sorted(EXPECTED) == sorted(f for f in os.listdir(CORRUPT) if f != "README.md")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_damaged_file(name):
    frames, exit_code, reason = EXPECTED[name]
    code, out, err = run_cli("-T", "jsonl", os.path.join(CORRUPT, name))
    assert code == exit_code, err
    assert "Traceback" not in err
    records = [r for r in jsonl(out) if r["kind"] == "frame"]
    assert len(records) == frames
    assert [r["frame"] for r in records] == list(range(1, frames + 1))
    if exit_code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("dissect: ") and reason in lines[0]
    elif reason:
        assert reason in {f["code"] for r in records for f in r["findings"]}
    # the good frames around the damage are decoded as usual
    assert all(r["protocol"] == "netquake" for r in records if not r["findings"] and r["caplen"] > 0)


def test_an_interface_option_that_runs_past_its_block_is_not_read():
    """Its one byte of value was taken as the time resolution (0: seconds, a frame a million times later), without a
    word; now the interface keeps microseconds and its first frame says the option was not read."""
    _, out, _ = run_cli("-T", "jsonl", os.path.join(CORRUPT, "pcapng-option-overrun.pcapng"))
    frames = [r for r in jsonl(out) if r["kind"] == "frame"]
    _, good, _ = run_cli("-T", "jsonl", os.path.join(CORRUPT, "pcapng-unknown-block.pcapng"))
    assert [r["time"] for r in frames] == [r["time"] for r in jsonl(good) if r["kind"] == "frame"]
    assert [[(f["code"], f["message"].split(" (every record")[0]) for f in r["findings"]] for r in frames] == [
        [("capture.corrupt", "interface 0's description block at byte 28 has an option (code 9) that runs past the "
                             "block: it and the options after it were not read")], [], []]


def test_good_frames_after_a_skipped_record_are_decoded():
    _, out, _ = run_cli("-T", "jsonl", os.path.join(CORRUPT, "pcapng-interface-out-of-range.pcapng"))
    records = jsonl(out)
    assert [r["protocol"] for r in records if r["kind"] == "frame"] == ["netquake", "frame", "netquake"]
