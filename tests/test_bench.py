"""tools/bench.py run for real on a small capture: a baseline build takes its turn in the same rounds."""

import os
import re
import shlex
import subprocess
import sys

from conftest import ROOT, TOOLS


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
    for view in (rows[:4], rows[4:]):  # each view's four rows share the tshark runs of their rounds
        assert len({cells[3] for cells in view}) == 1
