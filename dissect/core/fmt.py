"""Display helpers shared by dissectors."""


def dec_hex(value):
    """``1193002 (0x12342a)``"""
    return f"{value} (0x{value:x})" if value >= 0 else f"{value} (-0x{-value:x})"


def hex16(value):
    return f"0x{value:04x}"


def named(names, unknown="unknown"):
    """A formatter that shows an enumeration value by name: ``Deathmatch (1)``."""
    def fmt(value):
        return f"{names.get(value, unknown)} ({value})"
    return fmt


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
