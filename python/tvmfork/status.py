"""`tvmfork status`: one row per patch, joining what the series says (kind, size, Depends-On,
upstream status) with what the proving commands last wrote under `docs/proofs/`: each page
(`verify --table`, `verify --against R --table`, `roll --dry-run --table`) is a column named
by its file (pin.md -> "pin", first), and with a stage bundle in out/stage, whether it is ready."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from tvmfork import pages
from tvmfork.series import Patch, Series

PROOFS = Path("docs") / "proofs"


def changed_lines(patch: Patch) -> tuple[int, int]:
    """Lines the patch adds and removes (its diff, tests included)."""
    added = removed = 0
    for line in patch.code.decode("utf-8", "replace").splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def staged(out_dir: Path, patch: Patch) -> str:
    """ "ready" / "checks fail" from the stage bundle's checks.txt, "-" without one."""
    checks = out_dir / "stage" / patch.name.removesuffix(".patch") / "checks.txt"
    if not checks.is_file():
        return "-"
    results = [ln.split("\t")[-1] for ln in checks.read_text().splitlines() if ln.strip()]
    return "ready" if results and all(r.startswith("ok") for r in results) else "checks fail"


@dataclass(frozen=True)
class Status:
    head: tuple[str, ...]
    rows: list[tuple[str, tuple[str, ...]]]
    proofs: list[Path]


def gather(series: Series, repo_root: Path, out_dir: Path) -> Status:
    proofs = sorted((repo_root / PROOFS).glob("*.md"), key=lambda p: (p.stem != "pin", p.stem))
    columns = {p.stem: pages.read(p) for p in proofs}
    head = ("patch", pages.KIND, "+/-", "Depends-On", *columns, "staged", "upstream")
    rows = []
    for p in series.patches:
        added, removed = changed_lines(p)
        deps = [d for d in p.trailers.get("Depends-On", []) if d]
        cells = (
            "native" if p.native else "python",
            f"+{added}/-{removed}",
            f"{len(deps)} ({len(series.dependencies(p))})" if deps else "-",
            *(col.get(p.name, "-") for col in columns.values()),
            staged(out_dir, p),
            p.trailer("Upstream-Status") or "-",
        )
        rows.append((p.name, cells))
    return Status(head, rows, proofs)


def page(status: Status, repo_root: Path) -> str:
    """The status as docs/status.md: how to read it, then the table."""
    links = ", ".join(f"[{p.stem}]({p.relative_to(repo_root / 'docs')})" for p in status.proofs)
    lines = [
        f"Written by `tvmfork status --write` on {datetime.date.today().isoformat()}.",
        "",
        "- Depends-On: how many patches it names (its whole closure in brackets);",
        f"- the columns after it are the pages under docs/proofs/ ({links or 'none yet'}), "
        "what that command last showed for the patch: `needed` (its test fails on that stock "
        "and passes with the patch), `absorbed` (it passes on that stock), `clean` / `merged "
        "with 3-way` / `CONFLICT` (how it applies there);",
        "- staged: the stage bundle in out/stage on the machine that wrote this page.",
    ]
    title = "The series, patch by patch"
    return pages.render(title, lines, status.head, status.rows, ("python", "native"))


def table(status: Status) -> str:
    from tvmfork import ui

    return ui.columns(status.head, [(n.removesuffix(".patch"), *c) for n, c in status.rows])
