"""Cross-packet analysis: one tracker per protocol (an ``Analyzer``), fed every decoded message."""
