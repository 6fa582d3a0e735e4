import json
import os
import subprocess
import sys

import pytest
from hypothesis import settings

# CI runs the property tests with a fixed seed so that a submission's result does not depend on luck;
# local runs keep exploring new examples (and tools/fuzz.py explores further).
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.join(ROOT, "tools")
CAPTURES = os.path.join(ROOT, "captures")
sys.path.insert(0, TOOLS)


def run_cli(*args, stdin=None, env=None):
    """Run ``dissect`` as a real subprocess; return (exit code, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-m", "dissect", *map(str, args)], capture_output=True, text=True,
                          encoding="utf-8", cwd=ROOT, input=stdin, env=env, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def jsonl(text):
    # Split on "\n" only: str.splitlines() also splits at U+2028, U+0085 and the like, which JSON writes
    # unescaped inside strings (a TeeFrame client name may hold one).
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def capture(name):
    return os.path.join(CAPTURES, name)


@pytest.fixture
def cli():
    return run_cli
