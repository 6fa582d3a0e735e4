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
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
