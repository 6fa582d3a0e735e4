from .cursor import (I8, I16LE, I32BE, I32LE, U8, U16BE, U16LE, U32BE, U32LE, Cursor, Truncated,
                     Unterminated)
from .model import (SEVERITIES, SEVERITY_RANK, AnalysisRecord, Field, Finding, Message,
                    worst_severity)

__all__ = ["Cursor", "Truncated", "Unterminated", "Field", "Finding", "Message", "AnalysisRecord",
           "SEVERITIES", "SEVERITY_RANK", "worst_severity",
           "U8", "I8", "U16BE", "U16LE", "I16LE", "U32BE", "U32LE", "I32LE", "I32BE"]
