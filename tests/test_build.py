"""The Cython-compiled build is the pure-Python source, run faster: same output, same classes."""

import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import CAPTURES, ROOT, run_cli

import dissect

PACKAGE = os.path.join(ROOT, "dissect")
compiled_only = pytest.mark.skipif(not dissect.compiled(), reason="the pure-Python build is installed")


def declared_classes(pxd):
    """{class name: attribute names} of the ``cdef class`` blocks of a .pxd file."""
    classes, current = {}, None
    for line in open(pxd).read().splitlines():
        head = re.match(r"cdef class (\w+):", line)
        if head:
            current = classes.setdefault(head.group(1), [])
        elif current is not None and re.match(r"    cdef (public |readonly )?\S+ [\w, ]+$", line):  # any type
            names = re.match(r"    cdef (?:public |readonly )?\S+ ([\w, ]+)$", line).group(1)
            current += [name.strip() for name in names.split(",")]
        elif current is not None and re.match(r"    cdef \w+ \w+\[\d+\]", line):  # a C array, read in C only
            current.append(re.match(r"    cdef \w+ (\w+)\[", line).group(1))
        elif current is not None and line == "    cdef dict __dict__":  # instances take other attributes too
            current.append("__dict__")
        elif line and not line.startswith(" "):
            current = None
    return classes


@pytest.mark.parametrize("pxd", sorted(glob.glob(os.path.join(PACKAGE, "**", "*.pxd"), recursive=True)),
                         ids=lambda path: os.path.relpath(path, PACKAGE))
def test_declared_attributes_are_the_slots_of_the_source(pxd):
    """A .pxd that forgot an attribute would break only the compiled build; one that adds one would
    let the compiled build accept what the source refuses."""
    folders = [part for part in os.path.relpath(os.path.dirname(pxd), PACKAGE).split(os.sep) if part != "."]
    package = ".".join(["dissect", *folders])
    spec = importlib.util.spec_from_file_location(f"{package}.source_of_{os.path.basename(pxd)[:-4]}",
                                                  pxd[:-4] + ".py")
    source = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(source)
    classes = declared_classes(pxd)
    for name, attributes in classes.items():
        assert sorted(attributes) == sorted(getattr(source, name).__slots__), name


CAPTURE_FILES = sorted(glob.glob(os.path.join(CAPTURES, "*.pcap")) + glob.glob(os.path.join(CAPTURES, "*.pcapng")))
FIELD_KEYS = ["frame.number", "frame.time", "frame.protocol", "ip.src", "udp.srcport", "expert.code",
              "netquake.message", "odamex.message", "soldat.message", "teeframe.message",
              "netquake.response_time", "odamex.response_time", "teeframe.response_time"]
VIEWS = {"summary": [], "-V": ["-V"], "-x": ["-x"], "-T json": ["-T", "json"], "-T jsonl": ["-T", "jsonl"],
         "-T fields": ["-T", "fields", *(arg for key in FIELD_KEYS for arg in ("-e", key))],
         "--stats": ["--stats"], "--stats -T json": ["--stats", "-T", "json"], "-q --stats": ["-q", "--stats"]}


def run_pure_and_compiled(*args):
    """Run dissect interpreted and compiled side by side: (exit code, stdout, stderr) of each."""
    compiled_env = {name: value for name, value in os.environ.items() if name != "DISSECT_PURE_PYTHON"}
    with ThreadPoolExecutor(2) as pool:
        pure = pool.submit(run_cli, *args, env=dict(compiled_env, DISSECT_PURE_PYTHON="1"))
        built = pool.submit(run_cli, *args, env=compiled_env)
        return pure.result(), built.result()


@compiled_only
@pytest.mark.parametrize("view", VIEWS.values(), ids=VIEWS.keys())
@pytest.mark.parametrize("path", CAPTURE_FILES, ids=os.path.basename)
def test_pure_python_and_the_build_write_the_same(path, view):
    """Each capture on its own: one capture's difference cannot hide among the others' lines."""
    pure, built = run_pure_and_compiled(*view, path)
    assert pure[1]
    assert built == pure


@compiled_only
@pytest.mark.parametrize("view", [["-T", "jsonl"], ["-T", "json"], ["-V"], ["--stats", "-T", "json"]], ids=" ".join)
def test_both_builds_escape_hidden_characters_and_cut_messages_alike(tmp_path, view):
    """Names with the characters JSON escapes for terminals (the compiled writer escapes them in C, the pure
    build after orjson), and a message the snap length cut."""
    import capkit
    import netquake_peer as nq
    import teeframe_peer as tf
    hidden = "\u202eevil\u202c \u2066x\u2069 \u200b\u2028\ufeff\x7f \u061c\u00e9\u2013\u00b7"
    reply = nq.ccrep_server_info("1.2.3.4:26000", "\x9b31mred\x85\xa0", "e1m1", 1, 8)
    frames = [(capkit.DEFAULT_TS, capkit.ethernet(capkit.udp_packet("10.0.0.1", 26000, "10.0.0.7", 40000, reply))),
              (capkit.DEFAULT_TS + 1, capkit.ethernet(capkit.udp_packet(
                  "10.0.0.2", 8303, "10.0.0.7", 40001, tf.iext(7, [(hidden, hidden[:6], 276, 5, 1)]))))]
    snapped = capkit.ethernet(capkit.udp_packet("10.0.0.1", 26000, "10.0.0.8", 40000, reply))
    frames.append((capkit.DEFAULT_TS + 2, snapped[:60], len(snapped)))
    path = tmp_path / "hidden.pcap"
    capkit.write_pcap(path, frames)
    pure, built = run_pure_and_compiled(*view, path)
    assert pure[0] == 0 and ("\\u009b31mred\\u0085" in pure[1] or "\\x9b31mred\\x85" in pure[1])  # JSON; -V
    assert "\\u202eevil" in pure[1] or "--stats" in view
    assert built == pure


@compiled_only
@pytest.mark.parametrize("view", [[], ["-T", "jsonl"], ["--stats"]], ids=lambda view: " ".join(view) or "summary")
def test_both_builds_treat_tcp_segments_cut_by_the_capture_alike(tmp_path, view):
    """Soldat's lobby captured with a snap length of 100 bytes: the cut segments' gaps (reassembly.py and
    count_cut, both compiled)."""
    import capkit
    import dpkt
    with open(os.path.join(CAPTURES, "soldat-session.pcap"), "rb") as handle:
        frames = [(ts, data[:100], len(data)) for ts, data in dpkt.pcap.Reader(handle)]
    path = tmp_path / "soldat-100.pcap"
    capkit.write_pcap(path, frames, snaplen=100)
    pure, built = run_pure_and_compiled(*view, path)
    assert pure[0] == 0 and "cut_segment" in run_cli("--stats", path)[1]
    assert built == pure


@compiled_only
def test_a_source_edited_after_the_build_sets_the_build_aside(tmp_path):
    copy = tmp_path / "dissect"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("*.c", "__pycache__"))
    probe = [sys.executable, "-c", "import dissect, dissect.cli; print(dissect.compiled())"]
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("DISSECT_PURE_PYTHON", None)
    assert subprocess.run(probe, env=env, cwd=tmp_path, capture_output=True, text=True).stdout == "True\n"
    edited = copy / "core" / "fmt.py"
    later = max(os.path.getmtime(path) for path in glob.glob(str(copy / "core" / "fmt.*.so"))) + 60
    os.utime(edited, (later, later))
    proc = subprocess.run(probe, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert proc.stdout == "False\n" and proc.stderr == ""


def test_the_sources_run_without_cython_installed(tmp_path):
    """A few sources decorate their classes for the compiled build (``@cython.freelist``); where Cython is not
    installed, dissect.core.nocython stands in for its module, and the pure-Python package writes what it writes
    with Cython installed."""
    (tmp_path / "cython.py").write_text('raise ImportError("No module named cython")\n')
    pure = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    pure["DISSECT_PURE_PYTHON"] = "1"
    probe = [sys.executable, "-c", "import dissect.core.model as m, dissect.pipeline as p; "
                                   "print(m.cython.__name__, p.cython.__name__, m.Field.__module__)"]
    without = dict(pure, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))
    proc = subprocess.run(probe, env=without, cwd=ROOT, capture_output=True, text=True)
    assert proc.stdout == "dissect.core.nocython dissect.core.nocython dissect.core.model\n", proc.stderr
    for view in (["-V", "-x"], ["-T", "jsonl"]):
        for protocol in ("netquake", "odamex", "soldat", "teeframe"):
            path = os.path.join(CAPTURES, f"{protocol}-session.pcap")
            written = run_cli(*view, path, env=without)
            assert written[1] and written == run_cli(*view, path, env=pure)
