"""`tvmfork verify --alone`: each patch needed against the series without it.

`verify` compares stock with the whole fork, so a patch that extends an earlier fork patch
reads "needed" when only the earlier one is. Here each Python patch's regression tests run
twice on the stock venv's interpreter, with TVM's Python package replaced by an overlay:

- without it: the stock package plus the patch's `Depends-On` closure (stock itself where it
  has none); its tests must FAIL there (a failure `verify` counts as the bug, not an ERROR);
- with it: the closure plus the patch; its tests must pass, which also shows the closure is
  complete (a patch that needs one it does not name fails here).

An overlay is a tree of links to the stock venv's `tvm` package with the patched files written
over them (TVM finds its library beside its `__init__.py`, so the link tree loads the stock
library), put first on PYTHONPATH; one per set of patches, kept in the cache. A patch that is
native, or depends on one, cannot be shown this way (it needs a source build): it is listed
with that reason.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tvmfork import pages, proc, ui
from tvmfork.errors import PatchError
from tvmfork.series import Patch, Series
from tvmfork.verify import DEFAULT_TIMEOUT, Job, Outcome, chosen, regression_tests, run_jobs
from tvmfork.wheel import overlay

# where the overlay's marker file records that it is complete
_DONE = ".tvmfork-overlay"
# the reason of a patch whose hunks need a patch its Depends-On does not name
NOT_APPLYING = "does not apply on its Depends-On"


@dataclass(frozen=True)
class AloneRow:
    """One patch: its Depends-On closure, and its tests without and with it."""

    patch: str
    deps: tuple[str, ...]
    without: Outcome | None
    with_it: Outcome | None
    reason: str = ""

    @property
    def verdict(self) -> str:
        base = "its Depends-On" if self.deps else "stock"
        if self.without is None or self.with_it is None:
            if self.reason.startswith(NOT_APPLYING):
                return f"INCOMPLETE: {self.reason}"
            return f"cannot be shown: {self.reason}"
        if self.without.failed and self.with_it.passed:
            return f"ok: needed on {base}"
        if self.without.passed:
            return f"NOT NEEDED: its tests pass on {base} without it"
        if not self.without.failed:
            return f"UNPROVEN: without it {self.without.word}"
        return f"INCOMPLETE: with {base} and itself, {self.with_it.word}"

    @property
    def ok(self) -> bool:
        return self.verdict.startswith(("ok", "cannot"))


def stock_package(python: Path) -> Path:
    """The `tvm` package folder of the venv whose interpreter is `python`."""
    code = "import importlib.util as u; print(u.find_spec('tvm').submodule_search_locations[0])"
    out = proc.run([python, "-c", code]).stdout.strip().splitlines()[-1]
    return Path(out)


def overlay_key(patches: list[Patch]) -> str:
    h = hashlib.sha256()
    for p in patches:
        h.update(p.name.encode() + b"\0" + p.data + b"\0")
    return h.hexdigest()[:16]


def overlay_tree(package: Path, wheel: Path, patches: list[Patch], root: Path) -> Path:
    """A folder holding `tvm/`: links to `package`'s files, the patches' Python files (from
    `wheel`, the same stock wheel) written over them (no patches: the stock package); made
    once per set of patches under `root`. Returns the folder to put on PYTHONPATH."""
    dest = root / overlay_key(patches)
    if (dest / _DONE).is_file():
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    with zipfile.ZipFile(wheel) as zf:
        files = overlay.patched_files(zf, patches)
    tmp = dest.with_name(dest.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(package, tmp / "tvm", symlinks=True, copy_function=os.symlink)
    for wheel_path, data in files.items():
        target = tmp / wheel_path
        if target.is_symlink() or target.exists():
            target.unlink()
        if data is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    (tmp / _DONE).write_text("\n".join(p.name for p in patches) + "\n")
    tmp.rename(dest)
    return dest


def verify_alone(
    series: Series,
    repo_root: Path,
    stock_python: Path,
    stock_wheel: Path,
    cache: Path,
    only: list[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    on_done: Callable[[Job, Outcome, float], None] | None = None,
) -> list[AloneRow]:
    """Each chosen patch's regression tests without it (its Depends-On closure) and with it."""
    package = stock_package(stock_python)
    env = {"PYTHONDONTWRITEBYTECODE": "1"}
    rows: list[tuple[Patch, tuple[str, ...], str]] = []
    jobs: list[Job] = []
    for p in chosen(series, only):
        deps = series.dependencies(p)
        names = tuple(d.name for d in deps)
        why = series.needs_build(p)
        tests = tuple(regression_tests(p))
        if why or not tests:
            rows.append((p, names, why or "no Regression-Test"))
            continue
        try:  # the closure alone (none: the stock package itself), then with the patch
            base = overlay_tree(package, stock_wheel, deps, cache)
            full = overlay_tree(package, stock_wheel, [*deps, p], cache)
        except PatchError as exc:
            first = str(exc).splitlines()[0]
            rows.append((p, names, f"{NOT_APPLYING} ({first})"))
            continue
        jobs.append(Job(f"{p.name}/without", stock_python, tests, str(base)))
        jobs.append(Job(f"{p.name}/with", stock_python, tests, str(full)))
        rows.append((p, names, ""))
    results: dict[str, Outcome] = {}
    if jobs:
        with ui.step(f"verify {len(jobs) // 2} patch(es) alone: {len(jobs)} test runs"):
            results = run_jobs(jobs, repo_root, env, timeout, on_done=on_done)
    return [
        AloneRow(
            p.name, names, results.get(f"{p.name}/without"), results.get(f"{p.name}/with"), why
        )
        for p, names, why in rows
    ]


def table(rows: list[AloneRow]) -> str:
    data = [
        (
            r.patch,
            str(len(r.deps)),
            r.without.status if r.without else "-",
            r.with_it.status if r.with_it else "-",
            r.verdict,
        )
        for r in rows
    ]
    return ui.columns(("patch", "Depends-On", "without", "with", "verdict"), data)


# how a verdict reads in the docs page (the first matching prefix)
_KINDS = (
    ("ok", "needed alone"),
    ("NOT NEEDED", "not needed alone"),
    ("INCOMPLETE", "incomplete Depends-On"),
    ("UNPROVEN", "unproven"),
    ("cannot", "cannot be shown"),
)


def kind(row: AloneRow) -> str:
    return pages.kind_of(row.verdict, _KINDS, "unproven")


def markdown(rows: list[AloneRow], title: str, lines: list[str]) -> str:
    """The rows as a docs page (`pages`)."""
    cells = [
        (
            r.patch,
            (
                str(len(r.deps)),
                r.without.status if r.without else "-",
                r.with_it.status if r.with_it else "-",
                kind(r),
                r.verdict,
            ),
        )
        for r in rows
    ]
    head = ("patch", "Depends-On", "without", "with", pages.KIND, "verdict")
    return pages.render(title, lines, head, cells, [k for _, k in _KINDS])
