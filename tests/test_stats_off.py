"""Without --stats (or a report) no view reads the analyzers' stats(): they skip what only stats() shows,
and every record the run writes stays as it was."""

import json
import os

import pytest
from conftest import capture, run_cli

from dissect import Analyzer
from dissect.analysis.abuse import TrafficAnalyzer
from dissect.capture.sources import CaptureFiles
from dissect.pipeline import Pipeline
from dissect.registry import Registry
from dissect.session import Session

BUNDLED = sorted(name for name in os.listdir(os.path.dirname(capture("netquake-session.pcap")))
                 if name.endswith(".pcap"))


class _Kept:
    def __init__(self):
        self.records = []

    def frame(self, record):
        self.records.append(record)

    def analysis(self, rec):
        self.records.append(rec)


def _run(name, **options):
    session = Session(_Kept(), **options)
    for frame in CaptureFiles([capture(name)]):
        session.frame(frame)
    session.finish()
    return session


def _written(session):
    """The run's records as -T jsonl writes them."""
    return [json.dumps(record.to_dict(), sort_keys=True, default=str) for record in session.sink.records]


@pytest.mark.parametrize("name", BUNDLED)
@pytest.mark.parametrize("tree", [False, True])
def test_records_are_the_same_with_and_without_stats(name, tree):
    read = _run(name, tree=tree, stats=True)
    unread = _run(name, tree=tree)
    assert unread.analyzers["abuse"].stats_off and not read.analyzers["abuse"].stats_off
    assert _written(unread) == _written(read)
    assert len(_written(read)) > 10


def test_the_command_writes_the_same_frames_with_and_without_a_report(tmp_path):
    """--html reads the analyzers' stats without --stats: the frames it prints stay the same."""
    code, plain, _ = run_cli(capture("soldat-session.pcap"))
    code_html, with_report, _ = run_cli("--html", str(tmp_path / "r.html"), capture("soldat-session.pcap"))
    assert (code, code_html) == (0, 0)
    assert plain == with_report and "server list" in plain


@pytest.mark.parametrize("name", ["netquake-session.pcap", "odamex-session.pcap", "soldat-session.pcap",
                                  "teeframe-session.pcap"])
def test_servers_seen_are_kept_only_where_read(name):
    protocol = name.split("-")[0]
    read = _run(name, stats=True).analyzers
    unread = _run(name).analyzers
    assert read[protocol].stats()["servers"], "the capture lists servers"
    assert unread[protocol].stats_off and not read[protocol].stats_off
    assert unread[protocol].stats()["servers"] == []
    assert unread["abuse"].stats_off and not read["abuse"].stats_off


def test_a_report_reads_stats_without_the_option():
    session = _run("teeframe-session.pcap", tree=True, analyzer_stats=True)
    assert not session.analyzers["teeframe"].stats_off
    assert [s["server"] for s in session.analyzers["teeframe"].stats()["servers"]] == \
        ["127.0.0.1:8303", "127.0.0.1:8304"]


def test_amplification_is_measured_only_where_read():
    """What only --stats shows of the abuse analysis is not counted without it: amplification per request type,
    unsolicited replies per protocol, the bytes each address's queries caused (the top talkers). The rules'
    counts and records are the same."""
    read = _run("reflection.pcap", stats=True)
    unread = _run("reflection.pcap")
    abuse_read, abuse_unread = read.analyzers["abuse"], unread.analyzers["abuse"]
    assert any(kind.worst is not None for kind in abuse_read.amplification.values())
    assert sum(kind.requests for kind in abuse_read.amplification.values()) > 0
    assert abuse_unread.amplification == {} and abuse_unread.unsolicited == {}
    assert abuse_read.unsolicited
    assert any(host.caused_bytes for host in abuse_read.hosts.values())
    assert not any(host.caused_bytes or host.answered for host in abuse_unread.hosts.values())
    for (address, host), (same, kept) in zip(abuse_read.hosts.items(), abuse_unread.hosts.items()):
        assert (address, host.requests, host.received, host.unsolicited, host.oversize) == \
            (same, kept.requests, kept.received, kept.unsolicited, kept.oversize)
    summaries = [rec.summary for rec in read.sink.records if rec.kind == "analysis"]
    assert summaries == [rec.summary for rec in unread.sink.records if rec.kind == "analysis"]
    assert any(rec.protocol == "abuse" for rec in unread.sink.records if rec.kind == "analysis")


def _query_analyzer(stats_off):
    analyzer = TrafficAnalyzer([("p", {"req": ("request", "req"), "rep": ("reply", "req")}, None, None, None)])
    analyzer.stats_off = stats_off
    return analyzer


CLIENT, SERVER = ("10.0.0.1", 1000), ("10.0.0.2", 27960)


def test_queries_opened_without_stats_are_not_counted_once_stats_are_read():
    """A query opened while stats_off was set has no amplification to add to: a reply to it after the flag is
    cleared, the end of the capture, and a merge into an analyzer that keeps stats count it as answered nowhere."""
    flipped = _query_analyzer(stats_off=True)
    flipped.count(1, 1.0, "p", "req", CLIENT, SERVER, None, 20, 62)
    flipped.stats_off = False
    flipped.count(2, 1.1, "p", "rep", SERVER, CLIENT, None, 900, 942)
    flipped.finish()
    assert flipped.amplification == {}
    assert flipped.hosts[CLIENT[0]].received == 1 and flipped.hosts[CLIENT[0]].answered == 0

    kept = _query_analyzer(stats_off=False)
    kept.count(1, 1.0, "p", "req", CLIENT, SERVER, None, 20, 62)
    unread = _query_analyzer(stats_off=True)
    unread.count(3, 2.0, "p", "req", ("10.0.0.3", 1000), SERVER, None, 20, 62)
    kept.merge(unread)
    kept.finish()
    [row] = kept.stats()["amplification"]
    assert (row["protocol"], row["request"], row["requests"], row["answered"]) == ("p", "req", 1, 0)


def test_the_stats_record_of_parallel_workers_is_complete():
    code, out, _ = run_cli("-j", "2", "--stats", "-T", "json", capture("teeframe-session.pcap"))
    assert code == 0
    servers = [r for r in json.loads(out) if r["kind"] == "server"]
    assert sorted(s["server"] for s in servers) == ["127.0.0.1:8303", "127.0.0.1:8304"]


class _Bare(Analyzer):
    """A plugin's analyzer whose __init__ does not call Analyzer's."""

    def __init__(self):
        self.seen = 0


class _WithBare(Registry):
    def make_analyzers(self):
        return {**super().make_analyzers(), "bare": _Bare(), "plain": object()}


@pytest.mark.parametrize("read", [True, False])
def test_the_pipeline_tells_every_analyzer(read):
    pipeline = Pipeline(_WithBare(), analyzer_stats=read)
    flags = {key: analyzer.stats_off for key, analyzer in pipeline.analyzers.items() if key != "plain"}
    assert flags == dict.fromkeys(["bare", "netquake", "odamex", "soldat", "teeframe"], not read)
    assert pipeline.traffic.stats_off is (not read)
    assert not hasattr(pipeline.analyzers["plain"], "stats_off")
