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


def _fuzz_planted(tmp_path, target, plant):
    """Run the harness's child on ``target`` for 50 inputs, after ``plant`` (source lines) has broken something
    in the pure-Python package, as the harness imports it."""
    fuzz = os.path.join(TOOLS, "fuzz.py")
    planted = tmp_path / "planted.py"
    planted.write_text("import os, runpy, sys\n"
                       "os.environ['DISSECT_PURE_PYTHON'] = '1'\n"
                       f"sys.path.insert(0, {ROOT!r})\n"
                       + plant +
                       f"sys.argv = [{fuzz!r}, '--child', {target!r}, '--', '-runs=50']\n"
                       f"runpy.run_path({fuzz!r}, run_name='__main__')\n")
    return subprocess.run([sys.executable, str(planted)], capture_output=True, text=True, cwd=tmp_path, timeout=300)


def test_harness_catches_a_planted_bug(tmp_path):
    """The harness must turn a dissector error into a crash, or the runs above would prove nothing."""
    proc = _fuzz_planted(tmp_path, "netquake",
                         "import dissect.dissectors.netquake as nq\n"
                         "def broken(cur, msg):\n"
                         "    raise ValueError('planted')\n"
                         "nq.BODIES[nq.CCREQ_SERVER_INFO] = broken\n")
    assert proc.returncode != 0
    assert "ValueError: planted" in proc.stdout + proc.stderr  # the planted bug, not some other failure
    crashes = list(tmp_path.glob("crash-*"))
    assert len(crashes) == 1
    assert crashes[0].read_bytes()[4] == 0x02  # a CCREQ_SERVER_INFO, the command the planted bug breaks


def test_harness_catches_a_reader_that_loses_what_a_short_read_left(tmp_path):
    """The capture target reads each input at once and from a stream that gives 7 bytes a read: a reader that
    took one read where a record needs more (planted here) must be a crash, or chunk boundaries go untested."""
    proc = _fuzz_planted(tmp_path, "capture",
                         "import dissect.capture.files as files\n"
                         "def one_read(self, need):\n"
                         "    more = self.read1(files.READ_CHUNK)  # the harness's streams have read1\n"
                         "    self.data, self.pos = self.data[self.pos:] + more, 0\n"
                         "files._Chunks._refill = one_read\n")
    assert proc.returncode != 0
    assert "7 bytes at a time differ from those read at once" in proc.stdout + proc.stderr
    assert len(list(tmp_path.glob("crash-*"))) == 1
