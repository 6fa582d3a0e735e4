"""The atheris fuzz harness runs each target for a short budget in CI and finds no crash."""

import os
import subprocess
import sys

import pytest

import dissect
from conftest import ROOT, TOOLS

atheris = pytest.importorskip("atheris", reason="atheris (fuzzing) is not installed")


@pytest.mark.parametrize("target", [*dissect.protocols(), "capture"])
def test_short_fuzz_run(target, tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(TOOLS, "fuzz.py"), target, "--runs", "2000"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    row = [line.split() for line in proc.stdout.splitlines() if line.startswith(target)][0]
    assert row[1].replace(",", "") == "2000" and row[2] == "0"
    assert not list(tmp_path.glob("crash-*"))


def test_harness_catches_a_planted_bug(tmp_path):
    """The harness must turn a dissector error into a crash, or the runs above would prove nothing."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import runpy, sys\n"
        f"sys.path.insert(0, {ROOT!r})\n"
        "import dissect.dissectors.netquake as nq\n"
        "def broken(cur, msg):\n"
        "    raise ValueError('planted')\n"
        "nq.BODIES[nq.CCREQ_SERVER_INFO] = broken\n"
        f"sys.argv = [{os.path.join(TOOLS, 'fuzz.py')!r}, '--child', 'netquake', '--', '-runs=50']\n"
        f"runpy.run_path({os.path.join(TOOLS, 'fuzz.py')!r}, run_name='__main__')\n")
    proc = subprocess.run([sys.executable, str(planted)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode != 0
    assert "ValueError: planted" in proc.stdout + proc.stderr  # the planted bug, not some other failure
    crashes = list(tmp_path.glob("crash-*"))
    assert len(crashes) == 1
    assert crashes[0].read_bytes()[4] == 0x02  # a CCREQ_SERVER_INFO, the command the planted bug breaks
