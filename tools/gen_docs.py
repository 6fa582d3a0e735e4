"""Write README.md's tables that come from the protocols' own tables: the protocol list and the
finding codes. ``python tools/gen_docs.py`` rewrites them; ``--check`` exits 1 when README.md is
not current (a test runs it). Only the built-in protocols are listed (plugins document themselves).
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from dissect.registry import BUILTINS, load_protocols  # noqa: E402
from dissect.capture.tables import SHARED_FINDINGS  # noqa: E402

README = os.path.join(ROOT, "README.md")
MARKS = {"protocols": ("<!-- protocols: made by tools/gen_docs.py -->", "<!-- end of protocols -->"),
         "findings": ("<!-- findings: made by tools/gen_docs.py -->", "<!-- end of findings -->")}


def builtins():
    protocols = load_protocols()
    return [protocols[key] for key in sorted(BUILTINS) if key in protocols]


def protocol_table():
    rows = ["| protocol | key | transport | default ports | fields | findings | layout and choices |",
            "|---|---|---|---|---|---|---|"]
    for cls in builtins():
        ports = ", ".join(map(str, cls.ports)) or "any"
        rows.append(f"| {cls.title} | `{cls.key}` | {'/'.join(cls.transports).upper()} | {ports} | "
                    f"{len(cls.fields)} | {len(cls.findings)} | [docs/{cls.key}.md](docs/{cls.key}.md) |")
    return "\n".join(rows)


def finding_table():
    rows = ["| code | severity | rule it checks |", "|---|---|---|"]
    tables = [*SHARED_FINDINGS, *(cls.findings for cls in builtins())]
    for table in tables:
        for spec in table:
            rule = spec.rule.replace("|", "\\|")
            rows.append(f"| `{spec.code}` | {spec.severity} | {rule} |")
    return "\n".join(rows)


def render(text):
    for name, body in (("protocols", protocol_table()), ("findings", finding_table())):
        start, end = MARKS[name]
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{start}\n{body}\n{end}{tail}"
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when README.md is not current")
    args = parser.parse_args(argv)
    current = open(README, encoding="utf-8").read()
    wanted = render(current)
    if args.check:
        if wanted != current:
            print("README.md tables are not current: run python tools/gen_docs.py", file=sys.stderr)
            return 1
        return 0
    with open(README, "w", encoding="utf-8") as handle:
        handle.write(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
