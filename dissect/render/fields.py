"""``-T fields -e KEY ...``: one line a frame, one column a key, with tshark's ``-E`` options.

A column holds the field's decoded value: numbers in decimal, text as it is (control and other
unprintable characters escaped, as in every view), bytes in hex, booleans
as 1 or 0, ``frame.time`` as seconds since 1970 (tshark's ``frame.time_epoch``). A key that occurs
several times in a frame gives all its values joined by the aggregator (``-E occurrence=a``, the
default), or the first or last one.
"""

import math

from ..filter import frame_values
from .text import safe

SEPARATORS = {"/t": "\t", "/s": " "}
QUOTES = {"d": '"', "s": "'", "n": ""}
OPTIONS = {"header": ("y", "n"), "quote": tuple(QUOTES), "occurrence": ("f", "l", "a")}


class FieldOptions:
    """tshark's ``-E`` settings: header, separator, quote, occurrence, aggregator."""

    __slots__ = ("header", "separator", "quote", "occurrence", "aggregator")

    def __init__(self):
        self.header = False
        self.separator = "\t"
        self.quote = ""
        self.occurrence = "a"
        self.aggregator = ","

    @classmethod
    def parse(cls, settings):
        """``["header=y", "separator=,"]`` -> options; ValueError with the reason for a bad one."""
        options = cls()
        for setting in settings or ():
            name, sep, value = setting.partition("=")
            if not sep:
                raise ValueError(f"bad -E {setting!r}: expected NAME=VALUE")
            if name in ("separator", "aggregator"):
                value = SEPARATORS.get(value, value)
                if len(value) != 1:
                    raise ValueError(f"bad -E {setting!r}: {name} is one character, /t (a tab) or /s (a space)")
                setattr(options, name, value)
            elif name in OPTIONS:
                if value not in OPTIONS[name]:
                    raise ValueError(f"bad -E {setting!r}: {name} is one of {', '.join(OPTIONS[name])}")
                if name == "header":
                    options.header = value == "y"
                elif name == "quote":
                    options.quote = QUOTES[value]
                else:
                    options.occurrence = value
            else:
                raise ValueError(f"bad -E {setting!r}: options are header, separator, quote, occurrence, "
                                 f"aggregator")
        return options


class FieldsRenderer:
    """Writes the chosen keys of each frame shown; analysis records have no columns and are skipped."""

    def __init__(self, out, keys, options):
        self.out = out
        self.keys = list(keys)
        self.options = options
        if options.header:  # the keys unquoted, as tshark writes them
            out.write(options.separator.join(self.keys) + "\n")

    def frame(self, record):
        values = frame_values(record)
        self.out.write(self.options.separator.join(self._column(values.get(key, ())) for key in self.keys) + "\n")

    def analysis(self, rec):
        pass

    def _column(self, found):
        if not found:  # an empty column unquoted, as tshark writes it
            return ""
        occurrence = self.options.occurrence
        chosen = found[:1] if occurrence == "f" else found[-1:] if occurrence == "l" else found
        return self._quoted(self.options.aggregator.join(_text(value) for value in chosen))

    def _quoted(self, text):
        quote = self.options.quote
        if not quote:
            return text
        return quote + text.replace(quote, quote + quote) + quote


def _text(value):
    if value is True or value is False:
        return "1" if value else "0"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, float):
        return _float_text(value)
    return safe(str(value))  # a packet's text never breaks a row nor reaches the terminal raw


def _float_text(value):
    """The shortest decimal that reads back as the float, as JSON writes it: a time of a microsecond capture
    gives its six digits (nine would show the float's binary noise, .744587898 for .744588)."""
    if not math.isfinite(value):
        return repr(value)  # nan, inf
    if value.is_integer():
        return str(int(value))
    text = repr(value)
    if "e" in text:  # a tiny value in exponent form: plain digits instead
        return f"{value:.9f}".rstrip("0").rstrip(".")
    return text
