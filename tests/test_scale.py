"""Many files on a Dask cluster: a real LocalCluster of 2 worker processes, and a real `dask scheduler` +
`dask worker` started on 127.0.0.1, each write the Parquet rows and --stats of one process, row for row,
on bundled, generated, compressed and damaged captures; a failed task names its file and the run
exits 2 after writing the rest; progress; the optional extra."""

import contextlib
import gzip
import io
import json
import os
import socket
import subprocess
import sys
import time

import bench
import capkit
import netquake_peer as nq
import odamex_peer as od
import pyarrow.parquet as pq
import pytest
from conftest import CAPTURES, ROOT, capture, jsonl, run_cli
from test_columnar import servers_capture

from dissect import scale
from dissect.analysis.base import Analyzer
from dissect.analysis.common import ServersSeen
from dissect.columnar import TABLES, MissingExtra
from dissect.registry import UsageError
from dissect.scale import TaskProgress, run

BUNDLED = sorted(os.path.join(CAPTURES, name) for name in os.listdir(CAPTURES) if name.endswith(".pcap"))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The bundled captures, generated traffic, a gzip copy of the servers capture and a capture cut
    short in the middle of a record (which stops its file: exit 2)."""
    folder = tmp_path_factory.mktemp("inputs")
    traffic, servers, cut = folder / "traffic.pcap", folder / "servers.pcap", folder / "cut.pcap"
    bench.write_mixed(str(traffic), 3000)
    servers_capture(servers)
    with open(servers, "rb") as raw, gzip.open(folder / "servers.pcap.gz", "wb") as packed:
        packed.write(raw.read())
    cut.write_bytes(traffic.read_bytes()[:20000])
    return [*BUNDLED, str(traffic), str(folder / "servers.pcap.gz"), str(cut), str(servers)]


def run_quietly(*args, **kwargs):
    """A run, with what it wrote: (outcome, stats text, stderr lines)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        outcome = run(*args, out=out, **kwargs)
    return outcome, out.getvalue(), err.getvalue().splitlines()


@pytest.fixture(scope="module")
def single(inputs, tmp_path_factory):
    out = tmp_path_factory.mktemp("single") / "out"
    return (out, *run_quietly(inputs, str(out), stats=True, format="json"))


def assert_same_parquet(one, other, skip=()):
    for name in TABLES:
        parts = sorted(os.listdir(one / name))
        assert sorted(p for p in os.listdir(other / name) if not p.startswith(".")) == \
            [part for part in parts if part not in skip]
        for part in parts:
            if part in skip:
                continue
            mine, theirs = pq.read_table(one / name / part), pq.read_table(other / name / part)
            assert theirs.schema.equals(mine.schema, check_metadata=True)
            assert theirs.to_pylist() == mine.to_pylist()


def test_one_process_writes_rows_ordered_by_file_and_frame(single, inputs):
    out, outcome, stats, errors = single
    frames = pq.read_table(out / "frames", columns=["file", "frame"]).to_pylist()
    order = [(inputs.index(row["file"]), row["frame"]) for row in frames]
    assert order == sorted(order) and len(set(order)) == len(order)
    assert {row["file"] for row in frames} == set(inputs)  # the cut file's frames before the damage too
    assert outcome.code == 2
    assert errors == [f"dissect: {inputs[-2]}: record 172 header cut short at byte 19987 (13 of 16 bytes)"]
    assert '"kind":"stats","frames":' in stats


def test_a_local_cluster_of_two_processes_writes_what_one_process_writes(single, inputs, tmp_path):
    reference, expected, stats, errors = single
    outcome, got_stats, got_errors = run_quietly(inputs, str(tmp_path / "out"), stats=True, format="json",
                                                 dask="local", workers=2)
    assert_same_parquet(reference, tmp_path / "out")
    assert (outcome.code, got_stats, got_errors) == (expected.code, stats, errors)
    pids = {task["pid"] for task in outcome.tasks}
    assert len(pids) == 2 and os.getpid() not in pids


# -- a scheduler and workers as separate processes ----------------------------------------------------
def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """`dask scheduler` and `dask worker --nworkers 2` on 127.0.0.1, started elsewhere than the client's
    directory (paths reach the workers absolute)."""
    from distributed import Client
    elsewhere = tmp_path_factory.mktemp("workers")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    port = str(free_port())
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "dask"]  # the `dask` command
    quiet = dict(cwd=elsewhere, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = []
    try:
        started.append(subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard"],
                                        **quiet))
        started.append(subprocess.Popen([*dask, "worker", address, "--nworkers", "2", "--nthreads", "1",
                                         "--no-dashboard"], **quiet))
        with Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for proc in reversed(started):
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_a_scheduler_and_workers_write_what_one_process_writes(single, inputs, scheduler, tmp_path):
    reference, expected, stats, errors = single
    outcome, got_stats, got_errors = run_quietly(inputs, str(tmp_path / "out"), stats=True, format="json",
                                                 dask=scheduler)
    assert_same_parquet(reference, tmp_path / "out")
    assert (outcome.code, got_stats, got_errors) == (expected.code, stats, errors)
    assert os.getpid() not in {task["pid"] for task in outcome.tasks}


def test_a_failed_task_names_its_file_and_the_rest_is_written(single, inputs, scheduler, tmp_path):
    reference, first = single[0], inputs[:3]
    results = {}
    for how, dask in (("cluster", scheduler), ("process", None)):
        out = tmp_path / how
        (out / "messages" / ".part-00001.parquet.tmp").mkdir(parents=True)  # the task cannot write there
        outcome, _, errors = run_quietly(first, str(out), dask=dask)
        results[how] = (outcome.code, [line.replace(str(out), "DIR") for line in errors])
        for name in TABLES:
            obstacle = [".part-00001.parquet.tmp"] if name == "messages" else []
            assert sorted(os.listdir(out / name)) == obstacle + ["part-00000.parquet", "part-00002.parquet"]
            for part in ("part-00000.parquet", "part-00002.parquet"):  # the task's other parts are gone
                assert pq.read_table(out / name / part).equals(pq.read_table(reference / name / part))
    assert results["process"] == results["cluster"]
    code, errors = results["cluster"]
    assert code == 2 and len(errors) == 1  # e.g. "... IsADirectoryError: [Errno 21] Failed to open local file ..."
    assert errors[0].startswith(f"dissect: {first[1]}: task failed: IsADirectoryError: ")
    assert "DIR/messages/.part-00001.parquet.tmp" in errors[0]


def test_stats_alone_and_fail_on_are_the_same_on_the_cluster(scheduler):
    here = run_quietly(BUNDLED, None, stats=True, format="jsonl", fail_on="error")
    there = run_quietly(BUNDLED, None, stats=True, format="jsonl", fail_on="error", dask=scheduler)
    assert here[0].code == there[0].code == 1  # the damaged captures hold errors
    assert here[0].failed.code == there[0].failed.code == "netquake.length_mismatch"
    assert here[1:] == there[1:] and '"kind":"server"' in here[1]


# -- what the run checks first -------------------------------------------------------------------
def test_a_local_cluster_has_one_worker_process_per_core(monkeypatch):
    import distributed
    made = {}

    class FakeCluster:
        def __init__(self, **kwargs):
            made.update(kwargs)

    monkeypatch.setattr(distributed, "LocalCluster", FakeCluster)
    monkeypatch.setattr(distributed, "Client", lambda cluster: ("client", cluster))
    client, cluster = scale.connect("local")
    assert client == ("client", cluster) and isinstance(cluster, FakeCluster)
    assert (made["n_workers"], made["threads_per_worker"], made["processes"]) == (os.cpu_count(), 1, True)


def test_without_distributed_one_line_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(MissingExtra) as caught:
        run([capture("teeframe-session.pcap")], str(tmp_path / "out"), dask="local")
    assert str(caught.value) == "--dask needs dask[distributed]: pip install 'dissect-gameq[scale]'"
    assert isinstance(caught.value, ImportError) and not (tmp_path / "out").exists()


def test_an_unreachable_scheduler_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(scale, "CONNECT_TIMEOUT", 1.0)
    address = f"tcp://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(UsageError, match=f"^--dask {address}: cannot reach the scheduler: "):
        run([capture("teeframe-session.pcap")], str(tmp_path / "out"), dask=address)
    assert time.monotonic() - started < 15


def test_dask_alone_before_the_files_is_a_local_cluster(tmp_path):
    """`--dask a.pcap b.pcap`: argparse hands the optional ADDRESS the first capture; it is a file, so it
    stays one and --dask means local, the whole run the same as one process's."""
    files = [capture("teeframe-session.pcap"), capture("netquake-session.pcap")]
    code, out, err = run_cli("--stats", "--to-parquet", tmp_path / "one", *files)
    assert code == 0, err
    code, got, err = run_cli("--stats", "--to-parquet", tmp_path / "cluster", "--dask", *files)
    assert (code, got) == (0, out), err
    assert pq.read_table(tmp_path / "cluster" / "frames").num_rows == 11 + 54
    assert pq.read_table(tmp_path / "cluster" / "frames") == pq.read_table(tmp_path / "one" / "frames")


def test_a_scheduler_address_that_is_no_address_is_one_line(tmp_path):
    code, _, err = run_cli("--to-parquet", tmp_path / "out", "--dask", "bogus://nosuchhost",
                           capture("teeframe-session.pcap"))
    assert code == 2
    assert err.startswith("dissect: --dask bogus://nosuchhost: not a scheduler address (tcp://HOST:PORT or local): ")
    assert not (tmp_path / "out").exists()  # the address is tried before DIR is made
    assert err.count("\n") == 1 and "internal error" not in err


def test_a_directory_with_parts_of_an_earlier_run_is_refused(tmp_path):
    out = tmp_path / "out"
    assert run([capture("teeframe-session.pcap")], str(out)).code == 0
    with pytest.raises(UsageError, match=r"frames already holds Parquet files; give a new or empty directory$"):
        run([capture("netquake-session.pcap")], str(out))
    assert pq.read_table(out / "frames").num_rows == 11
    other = tmp_path / "other"
    (other / "messages").mkdir(parents=True)
    (other / "messages" / "old.parquet").write_bytes(b"")
    with pytest.raises(UsageError, match=r"messages already holds Parquet files"):
        run([capture("netquake-session.pcap")], str(other))
    assert sorted(os.listdir(other)) == ["messages"]  # refused before any table's folder is made


@pytest.mark.parametrize("args, message", [
    (dict(out_dir=None), "--dask needs --to-parquet DIR or --stats: there is nothing to write"),
    (dict(paths=["-"], dask="local"), "--dask reads capture files on the workers: standard input (-) cannot be one"),
    (dict(display_filter="teeframe.num_players >"), None),
])
def test_bad_usage_stops_before_any_task(tmp_path, args, message):
    call = {"paths": [capture("teeframe-session.pcap")], "out_dir": str(tmp_path / "out"), **args}
    with pytest.raises(UsageError) as caught:
        run(call.pop("paths"), call.pop("out_dir"), **call)
    assert message is None or str(caught.value) == message
    assert not (tmp_path / "out").exists()


# -- --stats -------------------------------------------------------------------------------------
def test_stats_of_one_file_are_what_the_command_prints(tmp_path):
    path = capture("teeframe-session.pcap")
    _, text, _ = run_quietly([path], None, stats=True, format="jsonl")
    code, expected, _ = run_cli("--stats", "-T", "jsonl", path)
    assert text == expected and code == 0


def test_stats_alone_write_no_parquet(single, inputs):
    _, stats_only, errors = run_quietly(inputs, None, stats=True, format="json")
    assert (stats_only, errors) == (single[2], single[3])


# -- progress ------------------------------------------------------------------------------------
class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_counts_files_frames_and_bytes_per_second(inputs):
    from dissect.scale import make_jobs
    jobs = make_jobs(inputs[:2], None, ((), None, False, None, (20.0, 5)))
    stream = Terminal()
    progress = TaskProgress(jobs, stream)
    progress.task(jobs[0], 11)
    assert stream.getvalue() == ""  # at most twice a second, and at the last
    progress.task(jobs[1], 54)
    progress.close()
    size = sum(os.path.getsize(path) for path in inputs[:2]) / 1e6
    line = stream.getvalue()
    assert line.startswith(f"\r2/2 files, 65 frames, {size:,.1f} MB, ") and line.endswith(" MB/s\n")
    assert TaskProgress(jobs, io.StringIO()).show is False  # not a terminal: no line


def test_a_json_format_without_stats_is_refused_before_anything_is_written(tmp_path):
    """Under --to-parquet -T only formats --stats' record: without --stats it would be ignored."""
    code, out, err = run_cli("--to-parquet", tmp_path / "out", "-T", "jsonl", capture("teeframe-session.pcap"))
    assert (code, out) == (2, "")
    assert err == ("dissect: -T jsonl formats --stats' record under --to-parquet or --dask (the tables are "
                   "Parquet): add --stats, or leave -T out\n")
    assert not (tmp_path / "out").exists()


def quake_server_capture(path, exchanges, padding=0):
    """``padding`` unrelated frames, then per (server port, level name) a server info request and its reply."""
    client, server = ("10.1.0.9", 40000), "10.1.0.1"
    frames = [capkit.udp_packet(*client, "10.1.0.200", 9, b"x") for _ in range(padding)]
    for port, level in exchanges:
        frames.append(capkit.udp_packet(*client, server, port, nq.ccreq_server_info()))
        frames.append(capkit.udp_packet(server, port, *client, nq.ccrep_server_info(f"{server}:{port}", "quake",
                                                                                     level, 1, 8)))
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + n * 0.01, capkit.ethernet(ip)) for n, ip in enumerate(frames)])


def test_stats_over_files_take_a_later_files_values_as_the_newer(tmp_path):
    """Frame numbers start at 1 in each file: the first file's reply (frame 42) must not outrank the second's
    (frame 2). The server both files saw shows the second file's level and last frame; the server only the first
    saw comes first, as the older."""
    first, second = tmp_path / "first.pcap", tmp_path / "second.pcap"
    quake_server_capture(first, [(26000, "e1m1"), (26001, "e1m2")], padding=40)
    quake_server_capture(second, [(26000, "e2m2")])
    code, out, err = run_cli("--to-parquet", tmp_path / "out", "--stats", "-T", "jsonl", first, second)
    assert code == 0, err
    (stats,) = [r for r in jsonl(out) if r["kind"] == "stats"]
    rows = [(row["server"], row["level_name"], row["last_frame"], row["responses"])
            for row in stats["transactions"]["netquake"]["servers"]]
    assert rows == [("10.1.0.1:26001", "e1m2", 44, 1), ("10.1.0.1:26000", "e2m2", 2, 2)]
    hosts = {row["address"]: row["requests"] for row in stats["abuse"]["top_talkers"]}
    assert hosts == {"10.1.0.9": 3}  # the abuse analysis's counts add up across the files


def test_a_server_listed_in_two_files_is_listed_last_by_the_later_files_master(tmp_path):
    """The first file's master lists the server at frame 42, the second's at frame 2: the second file's listing is the
    newer, so its master comes last in ``listed_by``."""
    server, launcher = ("198.51.100.1", 10666), ("10.7.0.1", 40000)
    paths = []
    for name, master, padding in (("first.pcap", ("10.7.0.100", 15000), 40), ("second.pcap", ("10.7.0.200", 15000), 0)):
        frames = [capkit.udp_packet(*launcher, "10.7.0.250", 9, b"x") for _ in range(padding)]
        frames += [capkit.udp_packet(*launcher, *master, od.request()),
                   capkit.udp_packet(*master, *launcher, od.master_list([server]))]
        paths.append(tmp_path / name)
        capkit.write_pcap(paths[-1], [(capkit.DEFAULT_TS + n * 0.01, capkit.ethernet(ip))
                                      for n, ip in enumerate(frames)])
    code, out, err = run_cli("--to-parquet", tmp_path / "out", "--stats", "-T", "jsonl", *paths)
    assert code == 0, err
    (stats,) = [r for r in jsonl(out) if r["kind"] == "stats"]
    (row,) = stats["transactions"]["odamex"]["servers"]
    assert row["listed_by"] == ["10.7.0.100:15000", "10.7.0.200:15000"]


def _seen(limit, *responses):
    """A servers-seen table of one file: (server, frame, level) responses in the order given."""
    table = ServersSeen(limit, ("level", "players"))
    for server, frame, level in responses:
        table.update(server, frame, (level, None))
    return table


def test_servers_seen_of_three_files_fold_in_the_files_order_whatever_their_frame_numbers():
    """The middle file has the highest frame numbers and the last one none at all; each later file's values win, rows
    come out by file then frame, and the limit keeps the newest rows."""
    run = _seen(3, ("a", 5, "one-a"), ("b", 9, "one-b"))
    for file in (_seen(3, ("c", 900, "two-c"), ("a", 950, "two-a")), _seen(3), _seen(3, ("b", 1, "four-b"))):
        run.merge(file, later=True)
    assert [(e["server"], e["level"], e["last_frame"], e["responses"]) for e in run.entries()] == [
        ("c", "two-c", 900, 1), ("a", "two-a", 950, 2), ("b", "four-b", 1, 2)]
    run.merge(_seen(3, ("d", 2, "five-d")), later=True)
    assert [e["server"] for e in run.entries()] == ["a", "b", "d"]


def test_servers_seen_count_the_rows_their_limit_forgot_also_in_a_merge():
    """A row evicted past the limit is counted (``servers_forgotten``, reported only where a row was forgotten); a
    merge adds the other table's count and the rows the merged table leaves out."""
    run = _seen(2, ("a", 1, "x"), ("b", 2, "x"))
    assert run.forgotten == 0 and "servers_forgotten" not in run.report()
    other = _seen(2, ("c", 3, "x"), ("d", 4, "x"), ("c", 5, "x"), ("e", 6, "x"))
    assert other.forgotten == 1 and [e["server"] for e in other.report()["servers"]] == ["c", "e"]
    run.merge(other)
    assert [e["server"] for e in run.entries()] == ["c", "e"] and run.report()["servers_forgotten"] == 3


def test_a_plugins_analyzer_follows_a_later_file_by_its_merge():
    class Counting(Analyzer):
        def __init__(self):
            super().__init__()
            self.merged = []

        def merge(self, other):
            self.merged.append(other)

    first, second = Counting(), Counting()
    first.follow(second)
    assert first.merged == [second]


def test_a_capture_path_given_after_dask_stays_a_capture_even_when_it_is_missing(tmp_path):
    """What has no scheme and no port is no scheduler's address: `--dask missing.pcap b.pcap` names the file that
    cannot be opened, as the run without --dask does."""
    code, _, err = run_cli("--to-parquet", tmp_path / "out", "--dask", "missing.pcap", capture("teeframe-session.pcap"))
    assert code == 2  # (before the line, Dask may warn that its dashboard's port is taken)
    assert err.splitlines()[-1] == "dissect: missing.pcap: cannot open: No such file or directory"
    assert "scheduler" not in err


def test_a_file_given_twice_is_refused(tmp_path):
    path = capture("teeframe-session.pcap")
    code, _, err = run_cli("--to-parquet", tmp_path / "out", path, os.path.join(CAPTURES, ".", "teeframe-session.pcap"))
    assert (code, err) == (2, f"dissect: {os.path.join(CAPTURES, '.', 'teeframe-session.pcap')} is given twice: each "
                              f"file is dissected once (its rows are named by file and frame)\n")
    assert not (tmp_path / "out").exists()


def test_jobs_do_not_go_with_parquet(tmp_path):
    """-j N would be ignored (files are tasks, --dask sizes the cluster): an error, as with -w and --html."""
    code, _, err = run_cli("-j", "2", "--to-parquet", tmp_path / "out", capture("teeframe-session.pcap"))
    assert (code, err) == (2, "dissect: -j does not go with --to-parquet or --dask (the tables are the output)\n")
    assert not (tmp_path / "out").exists()
    code, _, err = run_cli("-c", "5", "-V", "--to-parquet", tmp_path / "out", capture("teeframe-session.pcap"))
    assert (code, err) == (2, "dissect: -V, -c do not go with --to-parquet or --dask (the tables are the output)\n")


def test_fail_on_names_the_finding_the_filter_hides_and_its_file(tmp_path):
    files = [capture("netquake-session.pcap"), capture("teeframe-damaged.pcap")]
    code, _, err = run_cli("--to-parquet", tmp_path / "out", "-Y", "frame.number == 1", "--fail-on", "warning", *files)
    assert (code, err) == (1, f"dissect: --fail-on: frame 17 of {files[1]} has warning teeframe.reserved_nonzero "
                              f"(not shown by the filter)\n")


def _split_capture(source, folder, size):
    """``source``'s frames cut into files of ``size`` frames each (as editcap -c writes them)."""
    from dissect.capture.sources import open_capture
    frames = [(frame.ts, bytes(frame.data)) for frame in open_capture(source)]
    paths = []
    for start in range(0, len(frames), size):
        paths.append(folder / f"part{start // size}.pcap")
        capkit.write_pcap(paths[-1], frames[start:start + size])
    return paths


def test_the_abuse_rules_run_once_on_the_files_folded(tmp_path):
    """The reflection capture cut into 7 files of 200 frames: no file alone holds enough to break a rule, the files
    folded do. Their records go to a part of their own (file null), their findings to --stats and --fail-on, and
    the suspicions --stats lists are those records."""
    paths = _split_capture(capture("reflection.pcap"), tmp_path, 200)
    code, out, err = run_cli("--to-parquet", tmp_path / "out", "--stats", "-T", "json", "--fail-on", "warning", *paths)
    assert (code, err) == (1, "")
    stats = json.loads(out)[-1]
    counts = {row["code"]: row["count"] for row in stats["findings"]}
    assert (counts["abuse.reflection"], counts["teeframe.token_reuse"]) == (2, 1)
    suspicions = stats["abuse"]["suspicions"]
    rows = pq.read_table(tmp_path / "out" / "analysis" / "part-run.parquet").to_pylist()
    assert [(row["file"], row["protocol"], row["name"]) for row in rows] == [
        (None, "abuse", "reflection"), (None, "teeframe", "token_reuse"), (None, "abuse", "reflection")]
    assert sorted(s["rule"] for s in suspicions) == sorted(row["name"] for row in rows)
    findings = pq.read_table(tmp_path / "out" / "findings").to_pylist()
    assert [row["file"] for row in findings if row["code"] in counts and row["source"] == "analysis"
            and row["code"].split(".")[1] in ("reflection", "token_reuse")] == [None, None, None]
    for index in range(len(paths)):  # each file's own part: no abuse record
        part = pq.read_table(tmp_path / "out" / "analysis" / f"part-{index:05d}.parquet").to_pylist()
        assert all(row["protocol"] != "abuse" and row["name"] != "token_reuse" for row in part)


def test_the_abuse_threshold_holds_on_the_files_folded(tmp_path):
    """--abuse-rate reaches every file's analysis and the rules run on them folded: past the traffic's rates, nothing
    is found, and no run part is written."""
    paths = _split_capture(capture("reflection.pcap"), tmp_path, 200)
    code, out, err = run_cli("--to-parquet", tmp_path / "out", "--stats", "-T", "json", "--fail-on", "warning",
                             "--abuse-rate", "1000", *paths)
    assert (code, err) == (0, "")
    stats = json.loads(out)[-1]
    assert stats["abuse"]["thresholds"]["rate"] == 1000.0 and stats["abuse"]["suspicions"] == []
    assert not (tmp_path / "out" / "analysis" / "part-run.parquet").exists()
