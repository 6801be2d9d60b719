"""Test environments for `verify`, `conformance` and `upstream-tests`: one venv per TVM under
test (`test_sides`), sharing one deps venv.

torch, onnx and pytest are large and identical on both sides, so they are installed once in a
`deps` venv; each side's venv sees them through a `.pth` file and holds only its own TVM and
tvm-ffi, which come first on sys.path.

Venvs live in the shared cache, so two tvmfork commands (two clones, two terminals) may want
the same one: a command holds a shared lock on each venv it uses until it exits, and
rebuilding a venv takes the lock exclusively, so a rebuild never pulls a venv out from under
a running test; it stops with an error naming the venv instead.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from tvmfork import proc, ui
from tvmfork.errors import UsageError

if TYPE_CHECKING:
    from tvmfork.lock import Lock
    from tvmfork.series import Series
    from tvmfork.settings import Settings

MARKER = "tvmfork-venv.json"
# venv -> its open lock file, held (shared) until this process exits
_HELD: dict[Path, IO[str]] = {}


def python_of(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def site_packages(venv: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_path('purelib'))"
    out = proc.run([python_of(venv), "-c", code])
    return Path(out.stdout.strip())


def key(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def ensure(
    venv: Path,
    requirements: list[str],
    *,
    python: str,
    deps_venv: Path | None = None,
    fingerprint: str = "",
) -> Path:
    """A venv at `venv` with exactly these requirements installed; reused when unchanged.

    `fingerprint` names content the requirements do not show (a rebuilt wheel's hash).
    """
    want = {"requirements": requirements, "deps": str(deps_venv or ""), "fp": fingerprint}
    marker = venv / MARKER
    lock = _shared_lock(venv)
    if marker.is_file() and json.loads(marker.read_text()) == json.loads(json.dumps(want)):
        return python_of(venv)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise UsageError(
            f"venv {venv} must be rebuilt for this command, but another tvmfork command is "
            "using it; wait for that one to finish, or set cache_dir to another folder"
        ) from None
    try:
        _create(venv, requirements, python=python, deps_venv=deps_venv)
        marker.write_text(json.dumps(want))
    finally:
        fcntl.flock(lock, fcntl.LOCK_SH)
    return python_of(venv)


def _shared_lock(venv: Path) -> IO[str]:
    """This process's lock file of `venv` (beside it: `venv --clear` empties the folder),
    locked shared; waits while another process rebuilds the venv."""
    if venv not in _HELD:
        venv.parent.mkdir(parents=True, exist_ok=True)
        fh = (venv.parent / f"{venv.name}.lock").open("a+")
        fcntl.flock(fh, fcntl.LOCK_SH)
        _HELD[venv] = fh
    return _HELD[venv]


def _create(venv: Path, requirements: list[str], *, python: str, deps_venv: Path | None) -> None:
    with ui.step(f"venv {venv.name}: {' '.join(requirements)}"):
        proc.run([python, "-m", "venv", "--clear", venv])
        if deps_venv is not None:
            (site_packages(venv) / "tvmfork-deps.pth").write_text(
                str(site_packages(deps_venv)) + "\n"
            )
        log = venv / "tvmfork-pip.log"
        ui.note(f"    pip install (first time on a machine: minutes for torch; log {log})")
        proc.stream(
            [python_of(venv), "-m", "pip", "install", "--disable-pip-version-check", *requirements],
            log,
            _pip_progress,
        )


def _pip_progress(line: str) -> None:
    """pip's lines that say what it is doing: each package it takes, and the end."""
    if line.startswith(("Collecting ", "Processing ", "Installing collected", "Successfully")):
        text = line if len(line) <= 110 else line[:107] + "..."
        ui.note(f"    {text}")


def requirements(lines: list[str]) -> list[str]:
    """Requirement lines without comments and blanks."""
    stripped = (ln.split("#", 1)[0].strip() for ln in lines)
    return [ln for ln in stripped if ln]


def with_packages(specs: list[str]) -> list[str]:
    """`--with` values as pip requirements: a requirement as it is, or a requirements file
    (an existing file ending in .txt) read line by line."""
    reqs: list[str] = []
    for spec in specs:
        path = Path(spec)
        if spec.endswith(".txt"):
            if not path.is_file():
                raise UsageError(f"--with {spec}: no such requirements file")
            reqs += requirements(path.read_text().splitlines())
        else:
            reqs.append(spec)
    return reqs


def extras(vroot: Path, deps_venv: Path, reqs: list[str], *, python: str) -> Path:
    """The site-packages of a venv holding `reqs` on top of the shared deps venv (what the deps
    venv already has is not installed again); both sides' workers get it on their path, so
    the stock and fork sides see the same packages."""
    venv = vroot / f"extras-{key(*reqs, str(deps_venv))}"
    ensure(venv, reqs, python=python, deps_venv=deps_venv)
    return site_packages(venv)


def deps_venv(settings: Settings, root: Path) -> tuple[Path, list[str]]:
    """The shared venv of the packages both sides' tests need, and those packages
    (tests/requirements.txt of the repository at `root`)."""
    reqs = requirements((root / "tests" / "requirements.txt").read_text().splitlines())
    return settings.cache_dir / "venvs" / f"deps-{key(*reqs)}", reqs


def side_python(settings: Settings, lock: Lock, side: str) -> Path:
    """The interpreter of a side's venv in the cache, as `test_sides` names it: "fork" (the
    overlay of this series) or "stock" (the lock's stock wheel for this platform). Tests that
    use the venvs `tvmfork envs` made call this."""
    from tvmfork import stock

    vroot = settings.cache_dir / "venvs"
    if side == "fork":
        return python_of(vroot / "fork")
    if side == "stock":
        return python_of(vroot / f"stock-{stock.pick(lock).sha256[:12]}")
    raise UsageError(f"unknown side {side!r}: stock or fork")


@dataclass(frozen=True)
class Sides:
    """The stock and fork venvs of verify, conformance and upstream-tests."""

    stock: Path
    fork: Path
    included: set[str]
    stock_only: dict[str, str]  # patches whose fork side cannot run, and why


def test_sides(
    settings: Settings,
    lock: Lock,
    series: Series,
    root: Path,
    *,
    stock_ffi: str,
    against: str | None = None,
    fork_wheel: Path | None = None,
) -> Sides:
    """Make or reuse the two venvs. The stock side is the lock's stock wheel with `stock_ffi`,
    the fork side the overlay of the Python patches (or `fork_wheel`, e.g. a source wheel).

    With `against`, the stock side is that release from PyPI and the fork side an overlay of
    its wheel with the Python patches that still apply to it.
    """
    from tvmfork import manifest, stock
    from tvmfork.wheel import overlay
    from tvmfork.wheel.build import overlay_wheel

    deps, reqs = deps_venv(settings, root)
    stock_only: dict[str, str] = {}
    if against:
        base_wheel = stock.download(against, settings.cache_dir / "wheels" / "against")
        ui.note(f"{base_wheel.name}: sha256 {stock.sha256_of(base_wheel)} (not in the lock)")
        chosen, stock_only = overlay.applicable(series, base_wheel)
        with ui.step(f"overlay wheel from {base_wheel.name}"):
            res = overlay.build(lock, series, base_wheel, settings.out_dir / "against", only=chosen)
        wheel, included = res.path, set(res.included)
        stock_reqs = [against, stock_ffi]
        stock_name = f"stock-{key(against, stock_ffi)}"
    else:
        stock_path, stock_wf = stock.fetch(lock, settings.cache_dir, settings.wheel.stock_wheel)
        if fork_wheel:
            wheel, included = fork_wheel, manifest.included_in(fork_wheel)
        else:
            res = overlay_wheel(settings, lock, series, python_only=True)
            wheel, included = res.path, set(res.included)
        stock_reqs = [str(stock_path), stock_ffi]
        stock_name = f"stock-{stock_wf.sha256[:12]}"
    vroot = settings.cache_dir / "venvs"
    ensure(deps, reqs, python=settings.python)
    stock_py = ensure(vroot / stock_name, stock_reqs, python=settings.python, deps_venv=deps)
    fork_py = ensure(
        vroot / ("fork-against" if against else "fork"),
        [str(wheel)],
        python=settings.python,
        deps_venv=deps,
        fingerprint=stock.sha256_of(wheel),
    )
    return Sides(stock_py, fork_py, included, stock_only)
