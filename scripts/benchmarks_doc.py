"""Write measurements into docs/benchmarks.md from conformance reports (not a test).

Each report folder (`tvmfork conformance ... --report DIR` with timings: `make bench-models`)
becomes one section per suite, keyed by the date and the tvmfork commit its run.json names:
the run's settings and CPU, each side's TVM, the speed table (fork/PyTorch eager, fork/ONNX
Runtime, fork/torch.compile, stock/fork, compile times) and a chart of the ratios drawn from
results.jsonl into docs/charts/. A section already there for the same suite, date and commit
is replaced; the others are kept, newest first. Run it with tvmfork's venv:

    .venv/bin/python scripts/benchmarks_doc.py out/bench-host-1 [out/bench-host-2 ...]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from tvmfork.conformance import charts, report
from tvmfork.conformance.runner import Result

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
HEAD = """# Benchmarks

Measured by `tvmfork conformance` with timings (`make bench-models`, or `--ort --inductor`
by hand) and written here by `scripts/benchmarks_doc.py` from each run's report. Every ratio
is taken within one run, the runtimes interleaved in one process (a ratio below 1: the fork
is faster); compare numbers only within a section (the CPU changes from run to run). Newest
first; each section names the commit of tvmfork that ran it. Older measurements, written by
hand before this script, follow the generated sections.

"""
MARK = "<!-- section: {key} -->"
END = "<!-- end of section -->"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def sections(folder: Path, doc_dir: Path) -> list[tuple[str, str]]:
    """(key, Markdown) of each suite timed in the report at `folder`; charts go into
    `doc_dir`/charts/."""
    header = report.load_header(folder)
    if header is None:
        raise SystemExit(f"{folder}: no {report.HEADER} (a report of an older tvmfork?)")
    results = report.load(folder / "results.jsonl")
    commit = header.commit[:10] or "unknown"
    date = header.date[:10] or "undated"
    by_suite: dict[str, list[Result]] = {}
    for r in results:
        by_suite.setdefault(r.suite, []).append(r)
    out = []
    for suite, rs in by_suite.items():
        table = report.speed_table(rs, header.context)
        if not table:
            continue
        key = f"{date}-{suite}-{commit}"
        png = report.chart(
            report.speed(rs), doc_dir / "charts" / f"{_slug(key)}.png", f"{suite}, {date}"
        )
        lines = [MARK.format(key=key), f"## {suite}, {date} (commit {commit})", ""]
        lines += [f"- {line}" for line in header.lines()]
        lines += [f"- {line}" for line in report.summary(rs)]
        if png is not None:
            lines += ["", f"![{suite}: fork's time ratios](charts/{png.name})"]
        lines += ["", *table, "", END, ""]
        out.append((key, "\n".join(lines)))
    return out


def merge_into(doc: str, new: list[tuple[str, str]]) -> str:
    """`doc` with each new section in place of the one of the same key, else first."""
    body = doc[len(HEAD) :] if doc.startswith(HEAD) else doc
    first = ""
    for key, text in new:
        mark = MARK.format(key=key)
        if mark in body:
            start = body.index(mark)
            end = body.index(END, start) + len(END) + 1
            body = body[:start] + text + body[end:]
        else:
            first += text
    return HEAD + first + body


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("reports", nargs="+", type=Path, help="report folders (run.json, results)")
    ap.add_argument("--doc", type=Path, default=DOC, help=f"default {DOC.relative_to(ROOT)}")
    a = ap.parse_args(argv)
    if not charts.available():
        print("note: matplotlib is not installed: sections without charts", file=sys.stderr)
    new = [s for folder in a.reports for s in sections(folder, a.doc.parent)]
    if not new:
        raise SystemExit("no timed case in these reports: nothing to write")
    a.doc.parent.mkdir(parents=True, exist_ok=True)
    a.doc.write_text(merge_into(a.doc.read_text() if a.doc.is_file() else HEAD, new))
    for key, _ in new:
        print(f"{a.doc}: section {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
