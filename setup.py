"""Build: the package is plain Python; where a C compiler is at hand, Cython compiles its modules.

The compiled modules are the same source, run about 1.5 times as fast (see README, Performance); the
.pxd files beside a few modules declare their hot classes as extension types for the compiler.
Nothing depends on them: without a compiler, or with DISSECT_PURE_PYTHON=1 set at install
time, the build warns and installs the pure-Python package, which behaves identically.

The build says what it is doing, one line a stage on stderr (pip shows it only with -v): translating
to C takes seconds, compiling the C several minutes on 2 cores.
"""

import glob
import os
import sys
import threading
import time

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Live capture sits on scapy and signals, not on the hot path: it stays interpreted.
NOT_COMPILED = {"dissect/__init__.py", "dissect/__main__.py", "dissect/capture/live.py", "dissect/core/nocython.py"}
# Cython writes its C files here, not beside the sources.
C_DIR = os.path.join("build", "cython")


def say(message):
    """One line of progress, flushed at once so that `pip install -v` shows it as it happens; one write,
    so that lines from two compiling threads do not run into each other."""
    sys.stderr.write(f"dissect: {message}\n")
    sys.stderr.flush()


def cython_version():
    """The installed Cython's version, or None without Cython."""
    try:
        import Cython
    except ImportError:
        return None
    return Cython.__version__


def compiled_modules():
    """One Extension a module, its source still the .py file: the build translates it to C."""
    if os.environ.get("DISSECT_PURE_PYTHON"):
        say("DISSECT_PURE_PYTHON is set: installing the pure-Python package")
        return []
    if cython_version() is None:
        say("Cython is not installed: installing the pure-Python package")
        return []
    sources = sorted(path for path in glob.glob("dissect/**/*.py", recursive=True)
                     if path.replace(os.sep, "/") not in NOT_COMPILED and not path.endswith("__init__.py"))
    # No debug information and -O2 (Python's flags say -g -O3): the C compiles in 40% less time, a tenth of the
    # size, and Cython's C runs no slower (it spends its time in calls into the interpreter).
    flags = [] if sys.platform == "win32" else ["-g0", "-O2"]
    return [Extension(os.path.splitext(path)[0].replace(os.sep, "."), [path], extra_compile_args=flags)
            for path in sources]


class OptionalBuildExt(build_ext):
    """Translates the modules to C, then compiles them; a module that fails to compile stays pure
    Python and the install goes on."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:  # pip's build does not pass the option through: use every core
            self.parallel = os.cpu_count() or 1

    def run(self):
        if not self.extensions:
            return
        started, total = time.monotonic(), len(self.extensions)
        say(f"compiling {total} modules with Cython {cython_version()} (optional: set "
            "DISSECT_PURE_PYTHON=1 to skip; the pure-Python package behaves the same)")
        if not self.translate():
            return
        translated = time.monotonic()
        say(f"translated to C in {translated - started:.0f} s; compiling {total} C extensions, "
            f"{self.parallel} at a time")
        self.compiled, self.failed, self.counting = [], set(), threading.Lock()
        try:
            super().run()
        except Exception as exc:  # no compiler, no Python headers
            say(f"not compiling ({exc}): installing the pure-Python package")
            return
        done = time.monotonic()
        say(f"done: {len(self.compiled)} of {total} modules compiled in "
            f"{done - started:.0f} s ({translated - started:.0f} s translating to C, "
            f"{done - translated:.0f} s compiling C)")

    def translate(self):
        """Point each extension at its generated C file; False when Cython failed (nothing is compiled)."""
        from Cython.Build import cythonize
        say(f"translating to C in {C_DIR}")
        try:
            # nonecheck: a None where a declared extension type is expected raises, as in Python, and
            # never reaches a C struct (the .pxd files declare the hot classes; about 10% faster).
            translated = cythonize(self.extensions, build_dir=C_DIR, nthreads=os.cpu_count() or 1, quiet=True,
                                   compiler_directives={"language_level": 3, "nonecheck": True})
        except Exception as exc:  # Cython could not translate a module
            say(f"Cython failed ({exc}): installing the pure-Python package")
            return False
        # setuptools set up its own Extension objects: keep them, with the C files as their sources.
        c_files = {ext.name: ext.sources for ext in translated}
        for ext in self.extensions:
            ext.sources = c_files[ext.name]
        return True

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            with self.counting:
                self.failed.add(ext.name)
                say(f"{ext.name} stays pure Python ({exc})")
            return
        with self.counting:
            self.compiled.append(ext.name)
            say(f"[{len(self.compiled)}/{len(self.extensions)}] compiled {ext.name}")

    def copy_extensions_to_source(self):
        """An editable install copies the compiled modules beside the sources: only those that compiled."""
        self.extensions = [ext for ext in self.extensions if ext.name not in self.failed]
        super().copy_extensions_to_source()


setup(ext_modules=compiled_modules(), cmdclass={"build_ext": OptionalBuildExt})
