"""Files per second and frames per second of ``--to-parquet`` on a Dask cluster, and how it would grow.

Writes FILES captures of about MB megabytes each (tools/bench.py's mixed traffic, a different seed per
file), then dissects them into Parquet in this process and on LocalClusters of 1 and 2 worker
processes (``--workers``), timing each run. From the measured task times it models larger clusters:
a run takes the scheduler's time per task plus the longest worker's share of the tasks (dealt
longest first), the merge of the statistics and the check of the output on the client, and is bounded by
the storage's bandwidth, which this tool cannot measure for a shared file system.

    python tools/bench_scale.py [--files 8] [--mb 50] [--workers 1,2] [--model 4,8,16] [--keep DIR]
"""

import argparse
import heapq
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import bench  # noqa: E402

BYTES_PER_FRAME = 119  # tools/bench.py's traffic: 400,000 frames make 47.6 MB


def write_captures(folder, files, megabytes):
    paths = []
    for index in range(files):
        path = os.path.join(folder, f"capture-{index:02d}.pcap")
        bench.write_mixed(path, int(megabytes * 1e6 / BYTES_PER_FRAME), seed=index + 1)
        paths.append(path)
    return paths


def timed_run(paths, out, dask=None):
    from dissect.scale import run
    started = time.perf_counter()
    with open(os.devnull, "w") as devnull:
        outcome = run(paths, out, dask=dask, stats=True, out=devnull, progress=False)
    if outcome.code == 2:
        raise SystemExit("bench_scale: a task failed (see above): no figures")
    return time.perf_counter() - started, outcome


def on_cluster(paths, out, workers):
    """(seconds to start the cluster and import dissect in its workers, seconds of the run, the outcome,
    peak RSS per worker in MB)."""
    from distributed import Client, LocalCluster
    started = time.perf_counter()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.run(_warm_up)  # imports and the protocol tables, once per worker: not the files' work
        startup = time.perf_counter() - started
        seconds, outcome = timed_run(paths, out, client)
        peaks = sorted(client.run(_peak_rss_mb).values())
    return startup, seconds, outcome, peaks


def _warm_up():
    import pyarrow
    from dissect.columnar import Layout
    Layout()
    pyarrow.array([1])  # its first call imports pyarrow's pandas support (when pandas is installed)


def _peak_rss_mb():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def makespan(durations, workers):
    """The longest worker's total when the tasks are dealt longest first to the least loaded worker."""
    loads = [0.0] * workers
    for duration in sorted(durations, reverse=True):
        heapq.heappush(loads, heapq.heappop(loads) + duration)
    return max(loads)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--mb", type=float, default=50.0, help="size of each capture in MB")
    parser.add_argument("--workers", default="1,2", help="LocalCluster sizes to measure")
    parser.add_argument("--model", default="4,8,16", help="cluster sizes to model from the measured tasks")
    parser.add_argument("--keep", help="write the captures here and keep them (reused when present)")
    args = parser.parse_args()
    folder = args.keep or tempfile.mkdtemp(prefix="dissect-bench-scale-")
    os.makedirs(folder, exist_ok=True)
    try:
        existing = sorted(os.path.join(folder, name) for name in os.listdir(folder) if name.endswith(".pcap"))
        paths = existing if len(existing) == args.files else write_captures(folder, args.files, args.mb)
        report(paths, folder, [int(n) for n in args.workers.split(",")], [int(n) for n in args.model.split(",")])
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


def report(paths, folder, sizes, model):
    megabytes = sum(os.path.getsize(path) for path in paths) / 1e6
    out = os.path.join(folder, "out-process")
    shutil.rmtree(out, ignore_errors=True)
    _warm_up()
    seconds, outcome = timed_run(paths, out)
    frames = sum(task["frames"] for task in outcome.tasks)
    print(f"{len(paths)} captures, {megabytes:.1f} MB, {frames:,} frames; {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f} before the runs; {'compiled' if _compiled() else 'pure-Python'} build\n")
    print("| run | workers | cluster start + imports s | run s | files/s | frames/s | MB/s | speed-up | "
          "serial s | CPU share | peak RSS per worker |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    cpu = sum(task["cpu"] for task in outcome.tasks)
    print(_row("one process, no Dask", 1, None, seconds, len(paths), frames, megabytes, seconds, None, None,
               cpu / seconds))
    basis = None
    for workers in sizes:
        out = os.path.join(folder, f"out-{workers}")
        shutil.rmtree(out, ignore_errors=True)
        startup, wall, run_outcome, peaks = on_cluster(paths, out, workers)
        serial = max(0.0, wall - busiest(run_outcome.tasks))
        basis = basis or ([task["cpu"] for task in run_outcome.tasks], serial)
        cpu = sum(task["cpu"] for task in run_outcome.tasks)
        print(_row("LocalCluster", workers, startup, wall, len(paths), frames, megabytes, seconds, serial, peaks,
                   cpu / (wall * workers)))
    tasks, serial = basis
    for workers in model:
        wall = serial + makespan(tasks, workers)
        print(_row("model", workers, None, wall, len(paths), frames, megabytes, seconds, serial, None, None))
    print(f"\nOn the {sizes[0]}-worker cluster tasks took {min(tasks):.2f} to {max(tasks):.2f} CPU seconds each, "
          f"and {serial:.2f} s of the run was not spent in a task (the scheduler, sending tasks and results, "
          f"merging the statistics). The model adds that serial time to the longest worker's share of the tasks' "
          f"CPU times (dealt longest first), as if each worker had a core of its own. With {len(paths)} files no "
          f"more than {len(paths)} workers have work and the largest file bounds the run; the storage's bandwidth "
          f"bounds it too. CPU share: the tasks' CPU time over the run's time and workers (below 1: the workers "
          f"waited for a core).")


def busiest(tasks):
    """The largest sum of task times run by one worker process."""
    loads = {}
    for task in tasks:
        loads[task["pid"]] = loads.get(task["pid"], 0.0) + task["seconds"]
    return max(loads.values())


def _row(label, workers, startup, seconds, files, frames, megabytes, baseline, serial, peaks, share):
    start = "" if startup is None else f"{startup:.1f}"
    rss = "" if not peaks else " / ".join(f"{peak:.0f} MB" for peak in peaks)
    return (f"| {label} | {workers} | {start} | {seconds:.1f} | {files / seconds:.2f} | {frames / seconds:,.0f} | "
            f"{megabytes / seconds:.2f} | {baseline / seconds:.2f}x | {'' if serial is None else f'{serial:.2f}'} "
            f"| {'' if share is None else f'{share:.2f}'} | {rss} |")


def _compiled():
    import dissect
    return dissect.compiled()


if __name__ == "__main__":
    main()
