"""Display helpers shared by dissectors."""

try:
    import cython
except ImportError:  # no Cython: its class decorators as no-ops (see core/nocython.py)
    from . import nocython as cython


def dec_hex(value):
    """``1193002 (0x12342a)``"""
    if _COMPILED and type(value) is int:
        text = _dec_hex_text(value)  # C (fmt.pxd): an int of 64 bits without format()'s parsing of its spec
        if text is not None:
            return text
    return f"{value} (0x{value:x})" if value >= 0 else f"{value} (-0x{-value:x})"


def hex_text(value, width):
    """``f"0x{value:0{width}x}"``: ``0x002a`` for 42 and width 4."""
    if _COMPILED and type(value) is int:
        text = _hex_text(value, width)  # C (fmt.pxd), as dec_hex
        if text is not None:
            return text
    return f"0x{value:0{width}x}"


def hex16(value):
    return hex_text(value, 4)


@cython.cclass
class ValueTexts:
    """A formatter whose texts for some values are made once: ``ValueTexts(fmt, values)`` shows every value as
    ``fmt`` does, and an int, bytes or str of ``values``, False and True by the text ``fmt`` gave it. ``display_of``
    reads them in C where a named value's formatter, a Python function, costs a call."""

    __slots__ = ("fmt", "texts", "bool_texts")

    def __init__(self, fmt, values):
        self.fmt = fmt
        self.texts = {value: fmt(value) for value in values if _has_text(value)}
        # A bool's own (True == 1, and a formatter may show it otherwise); None where fmt raises for it.
        self.bool_texts = (_text_or_none(fmt, False), _text_or_none(fmt, True))

    def __call__(self, value):
        return self.text(value)

    def text(self, value):
        """fmt(value)."""
        if _has_text(value):
            text = self.texts.get(value)
            if text is not None:
                return text
        elif type(value) is bool:
            text = self.bool_texts[1 if value else 0]
            if text is not None:
                return text
        return self.fmt(value)


def _has_text(value):
    """Whether ValueTexts keeps a text for ``value``: exactly an int, bytes or str (a bool is an int, equal to 0 or 1,
    and has texts of its own)."""
    return type(value) is int or type(value) is bytes or type(value) is str


def _text_or_none(fmt, value):
    try:
        return fmt(value)
    except Exception:  # shown when asked, by fmt, which raises again: display_of then shows the default
        return None


def named(names, unknown="unknown"):
    """A formatter that shows an enumeration value by name: ``Deathmatch (1)``."""
    def fmt(value):
        return f"{names.get(value, unknown)} ({value})"
    return fmt


def decimal_text(number):
    """``str(number)``, from a table for the numbers most fields' offsets, lengths and values are."""
    if _COMPILED:
        text = _table_text(number, DECIMALS)  # C (fmt.pxd): an int's entry, without a Python-level comparison
        if text is None:
            text = _int_text(number)  # C: a larger int of 64 bits, its digits written without str()
    elif type(number) is int and 0 <= number < len(DECIMALS):
        text = DECIMALS[number]
    else:
        text = None
    return str(number) if text is None else text


def or_unknown(value):
    """A value's text on an info line, in a summary or a table: "?" for a field the message does not hold (None)."""
    if value is None:
        return "?"
    return decimal_text(value) if type(value) is int else str(value)


def counted(count, noun):
    """``count`` and ``noun``, plural but for one ("1 server", "3 servers"); "?" for a count the message lacks."""
    text = or_unknown(count)
    return f"{text} {noun}" if count == 1 else f"{text} {noun}s"


DECIMALS = [str(number) for number in range(4096)]
_COMPILED = not __file__.endswith(".py")


def endpoint(ip, port):
    """``10.0.0.1:26000``, ``[2001:db8::1]:26000``; the address alone without a port; "" without an address."""
    if ip is None:
        return ""
    if port is None:
        return ip
    # Each message's analysis names its two ends: the texts are kept by address, then port (two lookups cost a
    # tenth of writing one), at most ENDPOINT_TEXTS in all, then the table starts afresh.
    global _kept
    ports = _TEXTS.get(ip)
    if ports is None:
        ports = _TEXTS[ip] = {}
    text = ports.get(port)
    if text is None:
        if _kept >= ENDPOINT_TEXTS:
            _TEXTS.clear()
            _kept = 0
            ports = _TEXTS[ip] = {}
        text = ports[port] = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
        _kept += 1
    return text


ENDPOINT_TEXTS = 4096
_TEXTS = {}  # address -> {port: text}
_kept = 0
