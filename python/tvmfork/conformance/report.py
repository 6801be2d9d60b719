"""Conformance results: verdicts (regression, fix), JSON lines, a Markdown table, summaries.

A regression is a case that is ok on stock and not ok on the fork; a fix, the reverse. Both
are reported by name; any regression, and any wrong result on the fork, makes `tvmfork
conformance` exit non-zero.

A report folder holds `results.jsonl` (a record per case and side, each naming the TVM
version its side's worker imported and that side's wheel), `run.json` (the `Header`: what
the run was, each side's TVM and wheel, the shard) and `report.md` (both, as tables).
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from tvmfork.conformance.runner import Result

STATUSES = ("ok", "wrong", "error", "crash", "timeout", "not run", "bundled")
HEADER = "run.json"


def _wheel_version(name: str) -> str:
    try:
        return str(parse_wheel_filename(name)[1])
    except InvalidWheelFilename:
        return ""


@dataclass(frozen=True)
class Header:
    """What a report is of. `sides`: per side, the TVM version its worker imported (`tvm`),
    where from (`tvm_file`), and its wheel (`wheel`: the file name, `sha256`). `context`: the
    run in words (target, threads, CPU). `config`: the run configuration the workers got.
    `shard`: "K/N" for a shard of a run, empty for a whole run; `cases`: the whole run's case
    count (all shards)."""

    sides: dict[str, dict[str, str]] = field(default_factory=dict)
    context: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    shard: str = ""
    cases: int = 0
    commit: str = ""  # tvmfork's own commit (git HEAD of the repository that ran it)
    date: str = ""  # when the run ended (UTC, ISO 8601)

    def lines(self) -> list[str]:
        """Each side's TVM and wheel, as the report and the terminal give them."""
        out = []
        for side, d in self.sides.items():
            sha = f", sha256 {d['sha256'][:16]}" if d.get("sha256") else ""
            line = f"{side}: TVM {d.get('tvm') or '?'} from {d.get('wheel', '?')}{sha}"
            wanted = _wheel_version(d.get("wheel", ""))
            if d.get("tvm") and wanted and d["tvm"] != wanted:
                line += f" (NOT the wheel's version {wanted}: its venv imports another TVM)"
            out.append(line)
        if self.shard:
            out.append(f"shard {self.shard} of a run of {self.cases} cases")
        return out

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Header:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass(frozen=True)
class Row:
    suite: str
    case: str
    stock: Result | None
    fork: Result | None

    @property
    def verdict(self) -> str:
        if self.stock is None or self.fork is None:
            return ""
        if self.stock.ok and not self.fork.ok:
            return "REGRESSION"
        if self.fork.ok and not self.stock.ok:
            return "fixed"
        return ""


def rows(results: list[Result]) -> list[Row]:
    by: dict[tuple[str, str], dict[str, Result]] = defaultdict(dict)
    for r in results:
        by[(r.suite, r.case)][r.side] = r
    return [Row(s, c, d.get("stock"), d.get("fork")) for (s, c), d in by.items()]


def word(r: Result | None) -> str:
    if r is None:
        return "-"
    if r.status in ("ok", "not run"):
        return r.status
    return f"{r.status} ({r.stage})" if r.status in ("error", "crash", "timeout") else r.status


def summary(results: list[Result]) -> list[str]:
    """One line per suite: counts per side, regressions, fixes."""
    lines = []
    suites: dict[str, list[Row]] = defaultdict(list)
    for row in rows(results):
        suites[row.suite].append(row)
    for suite, rs in suites.items():
        parts = [f"{suite}: {len(rs)} cases"]
        for side in ("stock", "fork"):
            c = Counter(getattr(r, side).status for r in rs if getattr(r, side) is not None)
            if c:
                counts = ", ".join(f"{c[s]} {s}" for s in STATUSES if c[s])
                parts.append(f"{side} {counts}")
        reg = sum(r.verdict == "REGRESSION" for r in rs)
        fix = sum(r.verdict == "fixed" for r in rs)
        parts.append(f"{reg} regressions, {fix} fixed")
        lines.append("; ".join(parts))
    return lines


def regressions(results: list[Result]) -> list[Row]:
    return [r for r in rows(results) if r.verdict == "REGRESSION"]


def fork_wrong(results: list[Result]) -> list[Row]:
    """The cases whose result on the fork is a wrong number: they block a release as a
    regression does, whatever stock gave (a wrong number where stock stopped with an error is
    worse than the error)."""
    return [r for r in rows(results) if r.fork is not None and r.fork.status == "wrong"]


def _num(r: Result | None, key: str, fmt: str) -> str:
    if r is None or key not in r.times:
        return ""
    return format(r.times[key], fmt)


def markdown(
    results: list[Result],
    slowest: int = 10,
    context: str = "",
    header: Header | None = None,
    chart: str = "",
) -> str:
    """The table: every case with both sides, the verdict, times; then the slowest cases."""
    out = [
        "| suite | case | stock | fork | verdict | compile s (stock / fork) | "
        "run ms (stock / fork) | PyTorch ms | ORT ms | fork error |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    all_rows = rows(results)
    for r in all_rows:
        ref = r.fork or r.stock
        err = r.fork.error if r.fork is not None and not r.fork.ok else ""
        out.append(
            f"| {r.suite} | {r.case} | {word(r.stock)} | {word(r.fork)} | {r.verdict} | "
            f"{_num(r.stock, 'compile_s', '.1f')} / {_num(r.fork, 'compile_s', '.1f')} | "
            f"{_run_ms(r.stock)} / {_run_ms(r.fork)} | {_num(ref, 'torch_ms', '.1f')} | "
            f"{_num(ref, 'ort_ms', '.1f')} | {_cell(err)} |"
        )
    run = [f"- run: {context}"] if context else []
    sides = [f"- {line}" for line in header.lines()] if header is not None else []
    out += ["", "Summary:", "", *run, *sides, *[f"- {line}" for line in summary(results)]]
    table = speed_table(results, context)
    if table:
        out += ["", chart.strip(), "", *table] if chart else ["", *table]
    timed = [r for r in all_rows if r.fork is not None and "compile_s" in r.fork.times]
    timed.sort(key=lambda r: -(r.fork.times["compile_s"] if r.fork else 0))
    if timed:
        out += ["", f"Slowest fork compiles ({min(slowest, len(timed))}):", ""]
        for r in timed[:slowest]:
            assert r.fork is not None
            stock = f", stock {_num(r.stock, 'compile_s', '.1f')} s" if r.stock else ""
            out.append(f"- {r.suite}/{r.case}: {r.fork.times['compile_s']:.1f} s{stock}")
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Speed:
    """One timed case: medians (ms) and the ratios the performance goals are stated in. A
    ratio to PyTorch or ORT is taken within one side's worker (interleaved calls); stock/fork
    compares the two sides' medians."""

    suite: str
    case: str
    torch_ms: float | None
    ort_ms: float | None
    inductor_ms: float | None
    stock_ms: float | None
    fork_ms: float | None
    fork_per_torch: float | None
    fork_per_ort: float | None
    fork_per_inductor: float | None
    stock_per_fork: float | None
    stock_compile_s: float | None
    fork_compile_s: float | None
    ort_error: str = ""
    inductor_error: str = ""

    @property
    def compile_ratio(self) -> float | None:
        return _ratio(self.fork_compile_s, self.stock_compile_s)


SPEED_COLUMNS = (
    "fork_per_torch",
    "fork_per_ort",
    "fork_per_inductor",
    "stock_per_fork",
    "compile_ratio",
)


def _t(r: Result | None, key: str) -> float | None:
    return r.times.get(key) if r is not None and r.ok else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def speed(results: list[Result]) -> list[Speed]:
    """The cases the fork ran and timed (--reps), in report order."""
    out = []
    for r in rows(results):
        fork_ms = _t(r.fork, "tvm_ms")
        if fork_ms is None:
            continue
        out.append(
            Speed(
                r.suite,
                r.case,
                _t(r.fork, "torch_ms"),
                _t(r.fork, "ort_ms"),
                _t(r.fork, "inductor_ms"),
                _t(r.stock, "tvm_ms"),
                fork_ms,
                _ratio(fork_ms, _t(r.fork, "torch_ms")),
                _ratio(fork_ms, _t(r.fork, "ort_ms")),
                _ratio(fork_ms, _t(r.fork, "inductor_ms")),
                _ratio(_t(r.stock, "tvm_ms"), fork_ms),
                _t(r.stock, "compile_s"),
                _t(r.fork, "compile_s"),
                r.fork.notes.get("ort_error", "") if r.fork is not None else "",
                r.fork.notes.get("inductor_error", "") if r.fork is not None else "",
            )
        )
    return out


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def speed_table(results: list[Result], context: str = "") -> list[str]:
    """Markdown: a row per timed case, then the geometric mean of each ratio column; the
    TVM targets the sides compiled for (as `tvm.target.Target` printed them) under it."""
    timed = speed(results)
    if not timed:
        return []

    def f(v: float | None, fmt: str) -> str:
        return "" if v is None else format(v, fmt)

    def anchor(ms: float | None, error: str) -> str:
        return f(ms, ".2f") or ("not timed" if error else "")

    out = [
        f"Speed{f' ({context})' if context else ''}: medians in ms; a ratio below 1 is the "
        "fork faster (stock/fork: above 1). Inductor: torch.compile, default mode.",
        "",
        "| suite | case | PyTorch | ORT | Inductor | stock | fork | fork/PyTorch | fork/ORT | "
        "fork/Inductor | stock/fork | compile s stock / fork | compile fork/stock |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for t in timed:
        out.append(
            f"| {t.suite} | {t.case} | {f(t.torch_ms, '.2f')} | {anchor(t.ort_ms, t.ort_error)} "
            f"| {anchor(t.inductor_ms, t.inductor_error)} | {f(t.stock_ms, '.2f')} | "
            f"{f(t.fork_ms, '.2f')} | {f(t.fork_per_torch, '.2f')} | {f(t.fork_per_ort, '.2f')} "
            f"| {f(t.fork_per_inductor, '.2f')} | {f(t.stock_per_fork, '.2f')} | "
            f"{f(t.stock_compile_s, '.1f')} / {f(t.fork_compile_s, '.1f')} | "
            f"{f(t.compile_ratio, '.2f')} |"
        )
    means = []
    for col in SPEED_COLUMNS:
        vals = [v for t in timed if (v := getattr(t, col)) is not None]
        means.append(f"{f(geomean(vals), '.2f')} (n={len(vals)})" if vals else "")
    out.append(
        f"| geometric mean | {len(timed)} cases | | | | | | {means[0]} | {means[1]} | "
        f"{means[2]} | {means[3]} | | {means[4]} |"
    )
    targets = sorted({r.notes["tvm_target"] for r in results if "tvm_target" in r.notes})
    if targets:
        out += ["", f"TVM target{'s' if len(targets) > 1 else ''}: " + "; ".join(targets)]
    return out


def _run_ms(r: Result | None) -> str:
    if r is None:
        return ""
    return _num(r, "tvm_ms", ".1f") or _num(r, "first_run_ms", ".1f")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:160]


def write(
    results: list[Result], out_dir: Path, context: str = "", header: Header | None = None
) -> tuple[Path, Path]:
    """results.jsonl, report.md and (with a header) run.json in `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    jsonl = out_dir / "results.jsonl"
    jsonl.write_text("".join(json.dumps(r.to_json()) + "\n" for r in results))
    if header is not None:
        (out_dir / HEADER).write_text(json.dumps(header.to_json(), indent=1) + "\n")
    md = out_dir / "report.md"
    chart = _chart(results, out_dir, context or (header.context if header else ""))
    md.write_text(
        chart
        + markdown(results, context=context or (header.context if header else ""), header=header)
    )
    return jsonl, md


CHART_SERIES = (
    ("fork_per_torch", "fork / PyTorch eager"),
    ("fork_per_ort", "fork / ONNX Runtime"),
    ("fork_per_inductor", "fork / torch.compile"),
)


def chart(timed: list[Speed], path: Path, title: str) -> Path | None:
    """The speed table's ratios as a PNG at `path` (charts.draw); None without matplotlib."""
    from tvmfork.conformance import charts

    series = {label: [getattr(t, key) for t in timed] for key, label in CHART_SERIES}
    return charts.draw([t.case for t in timed], series, path, title)


def _chart(results: list[Result], out_dir: Path, context: str) -> str:
    """The speed chart (speed.png) for report.md, as a Markdown line; empty when nothing was
    timed."""
    timed = speed(results)
    if not timed:
        return ""
    png = chart(timed, out_dir / "speed.png", context)
    if png is None:
        return "(no speed chart: matplotlib is not installed: `pip install tvmfork[charts]`)"
    return f"![fork's time over PyTorch, ONNX Runtime and torch.compile]({png.name})"


def load(jsonl: Path) -> list[Result]:
    return [Result.from_json(json.loads(line)) for line in jsonl.read_text().splitlines()]


def load_header(folder: Path) -> Header | None:
    path = folder / HEADER
    return Header.from_json(json.loads(path.read_text())) if path.is_file() else None
