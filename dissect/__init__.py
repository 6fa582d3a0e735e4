"""dissect: a Wireshark-style dissector for classic game-server query protocols."""

__version__ = "0.1.0"
