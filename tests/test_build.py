"""The Cython-compiled build is the pure-Python source, run faster: same output, same classes."""

import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys

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
        elif current is not None and line.startswith("    cdef public object "):
            current += [name.strip() for name in line.split("object ", 1)[1].split(",")]
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


@pytest.mark.parametrize("view", [[], ["-V"], ["-x"], ["-T", "jsonl"], ["--stats"]],
                         ids=lambda view: " ".join(view) or "summary")
def test_pure_python_and_the_build_write_the_same(view):
    paths = sorted(glob.glob(os.path.join(CAPTURES, "*.pcap")))
    pure = run_cli(*view, *paths, env=dict(os.environ, DISSECT_PURE_PYTHON="1"))
    assert pure[1] and run_cli(*view, *paths) == pure


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
