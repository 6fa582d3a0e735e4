"""dissect: a Wireshark-style dissector for classic game-server query protocols."""

import os

__version__ = "0.1.0"


def _source_over_stale_builds():
    """Import a module's .py file instead of its compiled twin when the twin is out of date.

    The install compiles the modules with Cython when it can (see setup.py). A source file edited
    after that build is newer than its compiled module, which would silently run the old code.
    DISSECT_PURE_PYTHON=1 selects the source for every module: coverage-guided fuzzing and
    profilers need the interpreted code.
    """
    import importlib.machinery
    import importlib.util
    import sys

    every_module = bool(os.environ.get("DISSECT_PURE_PYTHON"))
    suffixes = importlib.machinery.EXTENSION_SUFFIXES

    def newer_than_builds(source, stem):
        built = [stem + suffix for suffix in suffixes if os.path.exists(stem + suffix)]
        # Slack: an install writes the two files within moments of each other, in either order.
        return bool(built) and os.path.getmtime(source) > max(os.path.getmtime(path) for path in built) + 2.0

    class SourceWhereBuildIsStale:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if not name.startswith(__name__ + ".") or not path:
                return None
            leaf = name.rpartition(".")[2]
            for folder in path:
                stem = os.path.join(folder, leaf)
                source = stem + ".py"
                if os.path.isfile(source) and (every_module or newer_than_builds(source, stem)):
                    return importlib.util.spec_from_file_location(name, source)
            return None

    sys.meta_path.insert(0, SourceWhereBuildIsStale)


def compiled():
    """True when the running modules are the Cython-compiled build."""
    from .core import cursor
    return not cursor.__file__.endswith(".py")


_source_over_stale_builds()
