"""Test environments for `verify`, `conformance` and `upstream-tests`: one venv per TVM under
test (made by `sides.test_sides`), sharing one deps venv.

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
from pathlib import Path
from typing import IO, TYPE_CHECKING

from tvmfork import proc, ui
from tvmfork.errors import UsageError

if TYPE_CHECKING:
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
