"""tools/bench.py run for real on a small capture: a baseline build takes its turn in the same rounds."""

import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, TOOLS


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed (Debian's tshark package)")
def test_a_baseline_build_is_timed_in_the_same_rounds_as_dissect_and_tshark(tmp_path):
    dissect = shlex.join(["env", f"PYTHONPATH={ROOT}", sys.executable, "-m", "dissect"])
    proc = subprocess.run([sys.executable, os.path.join(TOOLS, "bench.py"), "--sizes", "300", "--mix", "mixed",
                           "--views", "summary,stats", "--runs", "1", "--jobs", "2", "--keep-dir", str(tmp_path),
                           "--dissect", dissect, "--baseline", dissect],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout.splitlines()[0]
    assert header.count("dissect ") >= 2 and " Baseline: dissect " in header
    rows = [line.split(" | ") for line in proc.stdout.splitlines() if line.startswith("| mixed, 300 frames, ")]
    names = [cells[1] for cells in rows]
    assert names == ["summary", "summary -j 2", "summary (baseline)", "summary -j 2 (baseline)",
                     "stats", "stats -j 2", "stats (baseline)", "stats -j 2 (baseline)"]
    for cells in rows:
        assert re.fullmatch(r"[\d,]+", cells[2]), cells  # dissect frames/s
        # the ratio by CPU time: one process's, not -j's (its CPU seconds add up its processes')
        assert re.fullmatch(r"\d+\.\d\dx", cells[6]) if " -j " not in cells[1] else cells[6] == "—", cells
    for view in (rows[:4], rows[4:]):  # each view's four rows share the tshark runs of their rounds
        assert len({cells[3] for cells in view}) == 1
    verdict = [line.split(" | ") for line in proc.stdout.split("Verdict:")[1].split("Floor:")[0].splitlines()
               if line.startswith("| mixed, 300 frames | ")]
    assert [cells[1] for cells in verdict] == ["summary", "stats"]
    for cells, timed in zip(verdict, (rows[0], rows[4])):  # the one-process ratio of the rows above
        assert cells[3] == timed[4].split(" ")[0]


def test_the_ratio_by_cpu_time_is_tsharks_cpu_seconds_over_dissects():
    import bench
    ours = {"fps": 500.0, "us": 2000.0, "rss": 30.0, "cpu": 4.0}
    theirs = {"fps": 1000.0, "us": 1000.0, "rss": 90.0, "cpu": 1.0}
    cells = bench.row("given, 1 frames, 0.1 MB", "summary", ours, theirs, 1.5).split(" | ")
    assert cells[4:7] == ["0.50x (1.5x)", "no", "0.25x"]  # half tshark's rate, a quarter of its CPU time
    assert bench.row("given", "summary -j 2", ours, theirs, 1.5, one_process=False).split(" | ")[6] == "—"


def test_an_installed_dissect_script_is_run_as_it_is_and_its_build_named_by_its_python(tmp_path, monkeypatch):
    """``--dissect /venv/bin/dissect``: the build is found with the Python the script's first line names (pip writes
    that line), run from an empty folder with the command's environment; other commands get no interpreter."""
    import bench
    script = tmp_path / "dissect"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom dissect.cli import main\nsys.exit(main())\n")
    script.chmod(0o755)
    assert bench.interpreter([str(script)]) == [sys.executable]
    assert bench.interpreter(["env", f"PYTHONPATH={ROOT}", str(script)]) == ["env", f"PYTHONPATH={ROOT}",
                                                                             sys.executable]
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    described = bench.describe_build(bench.interpreter(["env", f"PYTHONPATH={ROOT}", str(script)]))
    assert described.startswith("dissect ") and f"from {os.path.join(ROOT, 'dissect')}," in described
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    assert bench.interpreter(["dissect"]) == [sys.executable]  # a bare name, found on PATH
    (tmp_path / "shell").write_text("#!/bin/sh\nexec true\n")
    assert bench.interpreter([str(tmp_path / "shell")]) is None
    assert bench.interpreter([str(tmp_path / "missing")]) is None
    assert bench.interpreter(["tshark", "-r", "x.pcap"]) is None


def test_the_verdict_gives_each_cell_its_distance_to_the_target_and_the_scaling_of_j():
    import bench
    text = bench.verdict_table([("query, 50,000 frames", "summary", 1.5, 0.6, 1.08),
                                ("mixed, 50,000 frames", "jsonl", 3.0, 4.5, 9.0)], 2)
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| query") or line.startswith("| mixed")]
    # 0.6x against 1.5x: 2.5 times faster still needed; -j 2 at 1.08x is 1.8 times one process
    assert rows[0][2:] == ["1.5x", "0.60x", "no", "2.50x", "1.08x", "1.80x |"]
    assert rows[1][2:] == ["3.0x", "4.50x", "yes", "—", "9.00x", "2.00x |"]
    assert text.rstrip().endswith("Targets met in one process: 1 of 2.")
    one = bench.verdict_table([("given, 10 frames", "stats", 3.0, 1.0, None)], 1)
    assert "-j" not in one and "| given, 10 frames | stats | 3.0x | 1.00x | no | 3.00x |" in one
