"""dissect: a Wireshark-style dissector for classic game-server query protocols.

The Python API (see README, "Python API")::

    import dissect
    with dissect.open("capture.pcapng", filter="netquake") as capture:
        for record in capture:
            print(record.number, record.info)

``open``, ``dissect_payload`` and ``protocols`` run captures; ``Dissector``, ``Analyzer``,
``FieldTable`` and ``FindingTable`` are what a protocol plugin is made of (entry-point group
``dissect.protocols``).
"""

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
        present = set(names)
        for name in names:
            if not name.endswith(".py"):
                continue
            built = [os.path.join(root, name[:-3] + suffix) for suffix in suffixes if name[:-3] + suffix in present]
            # Slack: an install writes a module's two files within moments of each other, in either order.
            if built and os.path.getmtime(os.path.join(root, name)) > max(map(os.path.getmtime, built)) + 2.0:
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


_EXPORTS = {
    "open": "api", "dissect_payload": "api", "protocols": "api", "Capture": "api",
    "CaptureError": "capture.files", "UsageError": "registry",
    "Dissector": "registry", "register": "registry", "Analyzer": "analysis.base",
    "FieldTable": "core.tables", "FindingTable": "core.tables", "FieldSpec": "core.tables",
    "FindingSpec": "core.tables", "AnalysisRecord": "core.model", "Message": "core.model", "Field": "core.model",
    "Finding": "core.model",
}
__all__ = sorted(_EXPORTS) + ["compiled", "__version__"]


def __getattr__(name):
    """The API's names, imported when first used: ``import dissect`` itself stays cheap."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dissect' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
