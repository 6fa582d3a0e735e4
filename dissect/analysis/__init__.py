"""Cross-packet analysis: one tracker per protocol, fed every decoded message."""


def make_analyzers():
    from .netquake import NetQuakeAnalyzer
    from .odamex import OdamexAnalyzer
    from .soldat import SoldatAnalyzer
    from .teeframe import TeeFrameAnalyzer
    return {"netquake": NetQuakeAnalyzer(), "teeframe": TeeFrameAnalyzer(), "odamex": OdamexAnalyzer(),
            "soldat": SoldatAnalyzer()}
