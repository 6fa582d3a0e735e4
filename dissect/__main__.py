"""``python -m dissect``, and the ``dissect`` command (pyproject.toml's entry point is ``run``)."""

import sys


def run():
    """The command. The engine's modules are imported here, inside it: Ctrl-C while they load (the first tenth of a
    second) ends the command quietly with exit status 130, as it does once the command runs, not with a traceback;
    so does a Ctrl-C that comes while the command tells of an error."""
    try:
        from .cli import main
        return main()
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(run())
