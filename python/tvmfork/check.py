"""`tvmfork check`: the series is sound before anything is built from it."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from tvmfork import lock as lockmod
from tvmfork import series as seriesmod
from tvmfork.errors import PatchError, TvmforkError
from tvmfork.series import REQUIRED_TRAILERS, STATUS_RE, Patch, Series


@dataclass
class Report:
    series: Series | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def trailer_problems(patch: Patch, repo_root: Path) -> list[str]:
    out = []
    for key in REQUIRED_TRAILERS:
        values = patch.trailers.get(key, [])
        if not values or not all(values):
            out.append(f"{patch.name}: missing trailer {key}:")
    status = patch.trailer("Upstream-Status")
    if status and not STATUS_RE.match(status):
        out.append(
            f"{patch.name}: Upstream-Status {status!r} is not one of pending, fork-only, "
            "submitted <url>, merged <commit>"
        )
    for test in patch.trailers.get("Regression-Test", []):
        test_file = test.split("::", 1)[0]
        if not test_file.startswith("tests/regression/"):
            out.append(f"{patch.name}: Regression-Test {test!r} is not under tests/regression/")
        elif not (repo_root / test_file).is_file():
            out.append(f"{patch.name}: Regression-Test {test!r} does not exist")
    return out


def run(repo_root: Path, stock_wheel: Path | None) -> Report:
    """Check the series at `repo_root/patches`; `stock_wheel` enables the overlay check."""
    report = Report()
    patches_dir = repo_root / "patches"
    try:
        lock = lockmod.load(patches_dir / seriesmod.LOCK)
        report.problems += lock.ffi_table_problems()
    except TvmforkError as exc:
        report.problems.append(str(exc))
    try:
        series = seriesmod.load(patches_dir)
    except PatchError as exc:
        report.problems.append(str(exc))
        return report
    report.series = series
    for name in seriesmod.unlisted(patches_dir):
        report.problems.append(f"{name} is in patches/ but not listed in the series")
    subjects: dict[str, str] = {}
    for p in series.patches:
        report.problems += trailer_problems(p, repo_root)
        if p.subject in subjects:
            report.problems.append(f"{p.name} and {subjects[p.subject]} share a subject")
        subjects[p.subject] = p.name
    python_patches = [p for p in series.patches if not p.native]
    if stock_wheel is None:
        report.notes.append(
            "overlay check not run: the stock wheel is not in the cache "
            "(`tvmfork wheel --mode overlay` downloads it)"
        )
    elif python_patches:
        from tvmfork.wheel.overlay import patched_files

        with zipfile.ZipFile(stock_wheel) as zf:
            try:
                patched_files(zf, python_patches)
                report.notes.append(
                    f"the Python hunks of {len(python_patches)} Python-only patch(es) apply "
                    f"cleanly to {stock_wheel.name}"
                )
            except PatchError as exc:
                report.problems.append(str(exc))
    return report
