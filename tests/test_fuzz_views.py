"""tools/fuzz_views.py: damaged captures through every view of the command find no internal error, and the
harness does see one where a bug is planted."""

import os
import subprocess
import sys

from conftest import CAPTURES, ROOT, TOOLS

FUZZ_VIEWS = os.path.join(TOOLS, "fuzz_views.py")


def _run(tmp_path, *args, plant=""):
    """The harness in a child process (pure Python where ``plant`` breaks something, as it imports it)."""
    script = tmp_path / "run.py"
    script.write_text("import os, runpy, sys\n"
                      + ("os.environ['DISSECT_PURE_PYTHON'] = '1'\n" if plant else "")
                      + f"sys.path.insert(0, {ROOT!r})\n"
                      + plant
                      + f"sys.argv = [{FUZZ_VIEWS!r}, *{list(args)!r}]\n"
                      + f"runpy.run_path({FUZZ_VIEWS!r}, run_name='__main__')\n")
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=600)


def test_damaged_captures_in_every_view_find_no_internal_error(tmp_path):
    proc = _run(tmp_path, "--cases", "1500", "--seed", "11", "--keep", str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "1500 cases, 0 failed (seed 11)"
    assert not list(tmp_path.glob("views-crash-*"))


def _planted(tmp_path, plant, capture, cases, seed):
    """The harness over ``cases`` cases of one bundled capture with ``plant`` breaking the package: its lines that
    report a case, after checking that it failed and counted them."""
    proc = _run(tmp_path, "--cases", str(cases), "--seed", str(seed), "--keep", str(tmp_path),
                os.path.join(CAPTURES, capture), plant=plant)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    reports = [line for line in proc.stdout.splitlines() if line.startswith("case ")]
    assert proc.stdout.strip().splitlines()[-1] == f"{cases} cases, {len(reports)} failed (seed {seed})"
    assert len(list(tmp_path.glob(f"views-crash-{seed}-*.pcap"))) == len(reports)
    return reports


def test_the_harness_reports_a_planted_dissector_bug(tmp_path):
    """A NetQuake server-info request that raises is reported by the views that show findings, and kept."""
    reports = _planted(tmp_path, "import dissect.dissectors.netquake as nq\n"
                                 "def broken(cur, msg):\n"
                                 "    raise ValueError('planted')\n"
                                 "nq.BODIES[nq.CCREQ_SERVER_INFO] = broken\n", "netquake-session.pcap", 40, 5)
    assert reports and all("ValueError: planted" in line for line in reports)


def test_the_harness_reports_an_internal_error_of_the_command(tmp_path):
    """An error that no frame's guard catches ends the command with its one-line "internal error": reported."""
    reports = _planted(tmp_path, "import dissect.render.printer as printer\n"
                                 "def broken(self, *args, **kwargs):\n"
                                 "    raise RuntimeError('planted at the end')\n"
                                 "printer.Printer.close = broken\n", "odamex-session.pcap", 5, 2)
    assert len(reports) == 5
    assert all("internal error: RuntimeError: planted at the end" in line for line in reports)
