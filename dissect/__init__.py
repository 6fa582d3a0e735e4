"""dissect: a Wireshark-style dissector for classic game-server query protocols."""

import os

__version__ = "0.1.0"


def _prefer_source_modules():
    """Import dissect's .py files even where compiled twins sit beside them.

    The install compiles the modules with Cython when it can (see setup.py). Coverage-guided fuzzing
    and line profiling need the interpreted source, so DISSECT_PURE_PYTHON=1 selects it at run time.
    """
    import importlib.util
    import sys

    class SourceFirst:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if not name.startswith(__name__ + ".") or not path:
                return None
            leaf = name.rpartition(".")[2]
            for folder in path:
                source = os.path.join(folder, leaf + ".py")
                if os.path.isfile(source):
                    return importlib.util.spec_from_file_location(name, source)
            return None

    sys.meta_path.insert(0, SourceFirst)


def compiled():
    """True when the running modules are the Cython-compiled build."""
    from .core import cursor
    return not cursor.__file__.endswith(".py")


if os.environ.get("DISSECT_PURE_PYTHON"):
    _prefer_source_modules()
