"""Many capture files at once (``--to-parquet DIR``, ``--dask``): one task per file, in this process or
on a Dask cluster, with the same results either way.

Each file is dissected as a capture of its own: frame numbers start at 1 in each file, and a
conversation that goes on from one file into the next is seen as two. A task writes its file's part
of each table (``DIR/<table>/part-NNNNN.parquet``, see columnar.py) and returns what the run merges:
the ``--stats`` counts, the analyzers, the errors. The merge goes in file order whatever order the
tasks end in, so one process, a ``LocalCluster`` and a cluster of many hosts give the same files and
the same statistics; each file's analyzers are folded in as the newest (``Analyzer.follow``), whatever
their frame numbers. In a run of several files the abuse analysis's rules run once, on the files' analyses folded
(a flood split across files is one): its records and their findings go to a part of their own
(``DIR/<table>/part-run.parquet``, ``file`` null), to ``--stats`` and to ``--fail-on``.

On a cluster every worker must have dissect (the same version, the same plugins) and see the
capture files and DIR at the same paths (a shared file system).
"""

import importlib
import logging
import os
import sys
import time
import uuid

from .analysis.abuse import DEFAULT_RATE, DEFAULT_WINDOW, KEY as ABUSE
from .capture.sources import STDIN, CaptureFiles, source_name
from .columnar import EXTRA, Layout, MissingExtra, ParquetParts, TableSink, part_name, prepare_dir, require_arrow
from .registry import UsageError, load_protocols
from .core.escape import tell
from .core.interrupt import defer_interrupt
from .render.printer import Printer
from .render.stats import StatsCollector
from .session import Session, explain_failure, read_frames

CONNECT_TIMEOUT = 30.0  # seconds to reach a scheduler, and then for a worker to be there
RUN_PART = "part-run"   # the part of the abuse rules run on several files folded: it sorts after the files' parts


class Job:
    """One task: a capture file, where its rows go, and the run's options (sent to a worker)."""

    __slots__ = ("index", "path", "name", "out_dir", "part", "decode_as", "display_filter", "stats", "fail_on",
                 "abuse", "folded", "protocols")

    def __init__(self, index, path, name, out_dir, part, options, protocols, folded=False):
        self.index = index
        self.path = path          # absolute: a worker's working directory is not the client's
        self.name = name          # as the user gave it: what the file column and messages say
        self.out_dir = out_dir
        self.part = part
        self.decode_as, self.display_filter, self.stats, self.fail_on, self.abuse = options
        self.folded = folded      # one file of several: the abuse rules run on the files folded, not here
        self.protocols = protocols

    def session_options(self):
        """The keyword arguments of the Session that dissects this job's file, or concludes the run's files folded."""
        rate, window = self.abuse
        return {"decode_as": self.decode_as, "display_filter": self.display_filter, "stats": self.stats,
                "fail_on": self.fail_on, "abuse_rate": rate, "abuse_window": window}

    def __getstate__(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state):
        for name, value in state.items():
            setattr(self, name, value)


class _Discard:
    """The sink of a run that writes no rows (``--stats`` alone)."""

    def frame(self, record):
        pass

    def analysis(self, rec):
        pass


class _Kept(_Discard):
    """A sink that keeps the analysis records it is given."""

    def __init__(self):
        self.records = []

    def analysis(self, rec):
        self.records.append(rec)


def dissect_file(job):
    """The task: dissect one capture file, write its parts, return what the run merges."""
    protocols = tuple(sorted(load_protocols()))
    if protocols != job.protocols:
        raise RuntimeError(f"this worker knows the protocols {', '.join(protocols)}, the client "
                           f"{', '.join(job.protocols)}: install the same dissect and plugins everywhere")
    started, cpu = time.perf_counter(), time.thread_time()
    parts = sink = None
    if job.out_dir is not None:
        layout = Layout()
        parts = ParquetParts(job.out_dir, job.part, layout)
        sink = TableSink(parts.write, layout, job.name)
    session = Session(sink or _Discard(), tree=sink is not None, **job.session_options())
    files = CaptureFiles([job.path])
    try:
        frames, interrupted = _read(files, session)
        session.finish(conclude=not job.folded)
        if parts is not None:
            sink.close()
            parts.commit()
    except BaseException:
        if parts is not None:
            parts.abort()
        raise
    errors = [error.replace(source_name(job.path), job.name, 1) for error in files.errors]
    if session.failed:  # each file numbers its frames from 1: the finding's place names its file
        session.failed.where = f"{session.failed.where} of {job.name}"
    analyzers = session.analyzers if job.stats else {}
    traffic = analyzers.pop(ABUSE, session.pipeline.traffic) if job.folded else None
    return {"index": job.index, "errors": errors, "failed": session.failed, "stats": session.stats,
            "analyzers": analyzers, "traffic": traffic, "frames": frames, "interrupted": interrupted,
            "seconds": time.perf_counter() - started, "cpu": time.thread_time() - cpu, "pid": os.getpid()}


def _read(files, session):
    """Dissect the file's frames; return how many, and whether a Ctrl-C stopped them. In this process's main thread
    (the run without --dask), a Ctrl-C is taken as the command takes it (``read_frames``), and the file is then
    concluded and its rows written as at its end; on a Dask worker nothing takes SIGINT."""
    guard = defer_interrupt(False)
    try:
        read_frames(files, session, guard)
    except KeyboardInterrupt:
        return session.current, True  # the last frame's number: the file's frames are numbered from 1
    finally:
        if guard is not None:
            guard.restore()
    return session.current, False


# -- the run -------------------------------------------------------------------------------------
def run_to_parquet(paths, out_dir, decode_as=(), display_filter=None, dask=None, stats=False, out=None,
                   format="text", fail_on=None, workers=None, abuse=(DEFAULT_RATE, DEFAULT_WINDOW)):
    """The command's ``--to-parquet DIR`` and ``--dask``: dissect ``paths`` into Parquet under ``out_dir``
    (None: write none, for ``--stats`` alone); ``dask``: None (this process), "local" (a LocalCluster of
    ``workers`` processes, default one per core), a scheduler address (``tcp://host:8786``) or a
    ``distributed.Client``. ``--stats`` goes to ``out`` in ``format`` (text, json or jsonl); errors go
    to stderr, one line each. Returns the exit code: 2 when a file could not be read to its end or
    a task failed (after everything else is written), 1 for ``fail_on``, else 0. ``abuse``: the abuse rules'
    threshold, (requests per second, seconds)."""
    return run(paths, out_dir, decode_as, display_filter, dask, stats, out, format, fail_on, workers,
               abuse=abuse).code


class Outcome:
    """What a run did: the exit code, the merged stats and analyzers, the errors, and per task the
    process that ran it, its frames, its time and its CPU time (for tools/bench_scale.py and the tests)."""

    def __init__(self, count, stats):
        self.code = 0
        self.stats = StatsCollector() if stats else None
        self.analyzers = None
        self.traffic = None  # a run of several files: the abuse analyses folded
        self.errors = []
        self.failed = False
        self.interrupted = False  # a Ctrl-C stopped the run (in this process): exit 130
        self.tasks = [None] * count


def run(paths, out_dir, decode_as=(), display_filter=None, dask=None, stats=False, out=None, format="text",
        fail_on=None, workers=None, progress=None, abuse=(DEFAULT_RATE, DEFAULT_WINDOW)):
    """``run_to_parquet``, returning the Outcome. ``progress``: show tasks done on stderr (None: when
    stderr is a terminal)."""
    paths = [os.fspath(path) for path in paths]
    check_usage(paths, out_dir, decode_as, display_filter, dask, stats)
    client, cluster = connect(dask, workers) if dask is not None else (None, None)  # a bad address makes no DIR
    try:
        if out_dir is not None:
            prepare_dir(out_dir)
        jobs = make_jobs(paths, out_dir, (list(decode_as), display_filter, stats, fail_on, tuple(abuse)))
        merge = _Merge(jobs, stats, TaskProgress(jobs, sys.stderr, progress))
        if client is None:
            merge.outcome.interrupted = _run_in_process(jobs, merge)
        else:
            _on_dask(jobs, client, merge)
        if merge.outcome.traffic is not None:
            _conclude_folded(merge.outcome, jobs[0])
    finally:
        if client is not None:
            _disconnect(dask, client, cluster)
    merge.progress.close()
    outcome = merge.outcome
    for error in outcome.errors:
        tell(str(error))
    if not outcome.interrupted:
        explain_failure(outcome.failed, display_filter is not None)
    if stats:
        Printer(out if out is not None else sys.stdout, format=format, stats=True).close(
            outcome.stats, outcome.analyzers or {})
    outcome.code = 130 if outcome.interrupted else 2 if outcome.errors else 1 if outcome.failed else 0
    return outcome


def _run_in_process(jobs, merge):
    """The files in turn in this process; True when a Ctrl-C stopped them (the file it came in is concluded and
    written, the next ones are not read)."""
    try:
        for job in jobs:
            if _in_process(job, merge):
                return True
    except KeyboardInterrupt:  # between files
        return True
    return False


def check_usage(paths, out_dir, decode_as, display_filter, dask, stats):
    """UsageError (one line) before any task starts: nothing to do, a missing extra, a bad filter."""
    if not paths:
        raise UsageError("no capture files given")
    seen = set()
    for path in paths:
        same = path if path == STDIN else os.path.realpath(path)
        if same in seen:  # its rows would carry the same file and frame as the first time's
            raise UsageError(f"{path} is given twice: each file is dissected once (its rows are named by file and "
                             f"frame)")
        seen.add(same)
    if out_dir is None and not stats:
        raise UsageError("--dask needs --to-parquet DIR or --stats: there is nothing to write")
    if out_dir is not None:
        require_arrow("--to-parquet")
    if dask is not None:
        if isinstance(dask, str):
            require_dask()
        if STDIN in paths:
            raise UsageError("--dask reads capture files on the workers: standard input (-) cannot be one")
    Session(_Discard(), decode_as=decode_as, display_filter=display_filter)  # raises for a bad filter or -d


def make_jobs(paths, out_dir, options):
    protocols = tuple(sorted(load_protocols()))
    out_dir = os.path.abspath(out_dir) if out_dir is not None else None
    return [Job(index, path if path == STDIN else os.path.abspath(path), source_name(path), out_dir,
                part_name(index, len(paths)), options, protocols, folded=len(paths) > 1)
            for index, path in enumerate(paths)]


def _conclude_folded(outcome, job):
    """The abuse rules on the run's files folded: their records to the run's part (``file`` null; none where they
    found nothing), their findings to the statistics and to ``--fail-on``, as a run over one file concludes them at
    its end."""
    kept = _Kept()
    session = Session(kept, **job.session_options())
    session.conclude(outcome.traffic)
    if kept.records and job.out_dir is not None:
        layout = Layout()
        parts = ParquetParts(job.out_dir, RUN_PART, layout)
        try:
            sink = TableSink(parts.write, layout, None)
            for rec in kept.records:
                sink.analysis(rec)
            sink.close()
            parts.commit()
        except BaseException:
            parts.abort()
            raise
    if outcome.stats is not None:
        outcome.stats.merge(session.stats)
        outcome.analyzers = dict(outcome.analyzers or {}, **{ABUSE: outcome.traffic})
    if session.failed and not outcome.failed:
        session.failed.where = f"{session.failed.where} of the files folded"
        outcome.failed = session.failed


def _in_process(job, merge):
    """Run one file's task here; True when a Ctrl-C stopped it."""
    try:
        summary = dissect_file(job)
    except Exception as exc:  # a task's failure costs its file, as on a cluster
        merge.failed(job, exc)
        return False
    merge.done(job, summary)
    return summary["interrupted"]


def require_dask():
    try:
        importlib.import_module("distributed")  # not an import statement: the compiled build takes a None
    except ImportError:                          # left in sys.modules for a module, importlib does not
        raise MissingExtra(f"--dask needs dask[distributed]: pip install 'dissect-gameq[{EXTRA}]'") from None


def _on_dask(jobs, client, merge):
    from distributed import as_completed
    run_id = uuid.uuid4().hex[:8]
    futures = {client.submit(dissect_file, job, key=f"dissect-{run_id}-{job.index}", pure=False): job
               for job in jobs}
    for future in as_completed(futures):
        job = futures[future]
        try:
            summary = future.result()
        except Exception as exc:  # the task raised, or its worker died: the file is named, the rest goes on
            merge.failed(job, exc)
        else:
            merge.done(job, summary)
        future.release()


def _disconnect(dask, client, cluster):
    """Close what ``connect`` opened: the LocalCluster it started and its client, or the client it made (a
    Client given as ``dask`` stays open: it is the caller's)."""
    if cluster is not None:
        client.close()
        cluster.close()
    elif client is not dask:
        client.close()


def connect(dask, workers=None):
    """(client, the LocalCluster it started or None) for ``--dask``: "local" or an address, or a Client."""
    from distributed import Client, LocalCluster
    if not isinstance(dask, str):
        return dask, None
    if dask in ("", "local"):
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        return Client(cluster), cluster
    try:
        client = Client(dask, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"--dask {dask}: cannot reach the scheduler: {exc}") from None
    except ValueError as exc:  # not an address at all ("missing port number", an unknown scheme)
        raise UsageError(f"--dask {dask}: not a scheduler address (tcp://HOST:PORT or local): {exc}") from None
    try:
        client.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError):
        client.close()
        raise UsageError(f"--dask {dask}: no worker joined the scheduler within {CONNECT_TIMEOUT:.0f} s") from None
    return client, None


class _Merge:
    """Folds the tasks' results into the Outcome in file order, whatever order they end in."""

    def __init__(self, jobs, stats, progress):
        self.outcome = Outcome(len(jobs), stats)
        self.progress = progress
        self.waiting = {}
        self.next = 0

    def done(self, job, summary):
        self.progress.task(job, summary["frames"])
        self.waiting[job.index] = summary
        self._fold()

    def failed(self, job, exc):
        self.progress.task(job, 0)
        self.waiting[job.index] = {"errors": [f"{job.name}: task failed: {type(exc).__name__}: {exc}"],
                                   "failed": False, "stats": None, "analyzers": {}}
        self._fold()

    def _fold(self):
        outcome = self.outcome
        while self.next in self.waiting:
            summary = self.waiting.pop(self.next)
            outcome.tasks[self.next] = {key: summary.get(key) for key in ("frames", "seconds", "cpu", "pid")}
            self.next += 1
            outcome.errors.extend(summary["errors"])
            outcome.failed = outcome.failed or summary["failed"]
            if outcome.stats is not None and summary["stats"] is not None:
                self._merge_stats(summary)
            traffic = summary.get("traffic")
            if traffic is not None and outcome.traffic is None:
                outcome.traffic = traffic
            elif traffic is not None:
                outcome.traffic.follow(traffic)  # the file's frames came after the run's so far

    def _merge_stats(self, summary):
        outcome, theirs = self.outcome, summary["stats"]
        outcome.stats.merge(theirs)
        if outcome.stats.first_ts is None:
            outcome.stats.first_ts = theirs.first_ts
        if theirs.last_ts is not None:
            outcome.stats.last_ts = theirs.last_ts
        if outcome.analyzers is None:
            outcome.analyzers = summary["analyzers"]
            return
        for key, analyzer in outcome.analyzers.items():
            analyzer.follow(summary["analyzers"][key])  # the file's frames came after the run's so far


class TaskProgress:
    """The progress line on stderr: files done of all, frames, and bytes per second (the capture files'
    sizes over the time since the run started), redrawn at most twice a second and left standing at
    the end. Shown on a terminal, or when ``show`` is true."""

    def __init__(self, jobs, stream, show=None):
        self.stream = stream
        self.show = stream is not None and (stream.isatty() if show is None else show)
        self.sizes = {job.index: _size(job.path) for job in jobs}
        self.total = len(jobs)
        self.done = 0
        self.bytes = 0
        self.frames = 0
        self.started = self.last = time.monotonic()
        self.shown = False

    def task(self, job, frames):
        self.done += 1
        self.bytes += self.sizes[job.index]
        self.frames += frames
        now = time.monotonic()
        if self.show and (self.done == self.total or now - self.last >= 0.5):
            self.last = now
            self.stream.write("\r" + self.line())
            self.stream.flush()
            self.shown = True

    def line(self):
        elapsed = max(time.monotonic() - self.started, 1e-6)
        return (f"{self.done}/{self.total} files, {self.frames:,} frames, {self.bytes / 1e6:,.1f} MB, "
                f"{self.bytes / 1e6 / elapsed:,.1f} MB/s")

    def close(self):
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
