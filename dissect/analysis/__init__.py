"""Cross-packet analysis: one tracker per protocol, fed every decoded message."""


def make_analyzers():
    from .netquake import NetQuakeAnalyzer
    return {"netquake": NetQuakeAnalyzer()}
