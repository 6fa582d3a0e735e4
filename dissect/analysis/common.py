"""Helpers shared by the per-protocol trackers."""

from ..core import Field


class Timing:
    """Count, minimum, mean and maximum of response times, in constant memory."""

    __slots__ = ("count", "total", "low", "high")

    def __init__(self):
        self.count = 0
        self.total = 0.0
        self.low = None
        self.high = None

    def add(self, seconds):
        self.count += 1
        self.total += seconds
        self.low = seconds if self.low is None else min(self.low, seconds)
        self.high = seconds if self.high is None else max(self.high, seconds)

    def as_dict(self):
        if not self.count:
            return {"count": 0}
        return {"count": self.count, "min": self.low, "mean": self.total / self.count, "max": self.high}


def annotate_response(record, msg, tree, request_frame, request_ts, key_prefix):
    """Wireshark-style generated fields on a reply: which frame asked, and how long it took."""
    elapsed = max(0.0, record.ts - request_ts)
    msg.data["request_frame"] = request_frame
    msg.data["response_time"] = elapsed
    if tree:
        msg.fields.append(Field(f"{key_prefix}.request_in", "Request in frame", 0, 0, request_frame,
                                generated=True))
        msg.fields.append(Field(f"{key_prefix}.response_time", "Response time", 0, 0, elapsed,
                                display=f"{elapsed * 1000:.3f} ms", generated=True))
    return elapsed
