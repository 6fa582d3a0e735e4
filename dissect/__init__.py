"""dissect: a Wireshark-style dissector for classic game-server query protocols."""

import os

__version__ = "0.1.0"


def _build_is_stale(folder):
    """True when a module's source was edited after its compiled twin was built.

    The install compiles the modules with Cython when it can (see setup.py). A compiled module would
    silently run the old code; and compiled modules share declared types (the .pxd files), so one
    stale module means the whole build is set aside, not just that module.
    """
    import importlib.machinery
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    for root, _, names in os.walk(folder):
        for name in names:
            if not name.endswith(".py"):
                continue
            stem = os.path.join(root, name[:-3])
            built = [stem + suffix for suffix in suffixes if os.path.exists(stem + suffix)]
            # Slack: an install writes a module's two files within moments of each other, in either order.
            if built and os.path.getmtime(stem + ".py") > max(map(os.path.getmtime, built)) + 2.0:
                return True
    return False


def _import_sources():
    """Import dissect's .py files even where compiled twins sit beside them."""
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


# DISSECT_PURE_PYTHON=1 selects the source too: coverage-guided fuzzing and profilers need it.
if os.environ.get("DISSECT_PURE_PYTHON") or _build_is_stale(os.path.dirname(os.path.abspath(__file__))):
    _import_sources()
