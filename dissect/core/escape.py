"""Text reaches a terminal only as printable characters.

Packet strings, file names, interface names and the like may hold control characters, terminal escapes
and the invisible format characters (bidi overrides and isolates, line separators, joiners), which can
make a name display reversed or hide text: they are shown escaped, as Python writes them.
"""

import sys

_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escaped(text):
    """``text`` with every character that is not printable written as its escape (``\\x1b``, ``\\u202e``)."""
    return "".join(char if char.isprintable() else _escape(char) for char in text)


def printable(text):
    """``text`` as it is when it is all printable, else ``escaped(text)``."""
    return text if text.isprintable() else escaped(text)


def tell(line):
    """One line to standard error as ``dissect: line``, escaped: what it quotes (a path, an interface, a field
    value) never reaches the terminal raw. Without a standard error (``2>&-``) the line is dropped, and the
    command goes on to its exit status."""
    if sys.stderr is None:  # print would write to standard output instead
        return
    try:
        print(f"dissect: {printable(line)}", file=sys.stderr)
    except (OSError, ValueError):  # closed, or a descriptor the system reused for a file not open for writing
        pass


def _escape(char):
    named = _NAMED_ESCAPES.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
