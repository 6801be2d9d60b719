"""Test environments for `verify`: one venv per TVM under test, sharing one deps venv.

torch, onnx and pytest are large and identical on both sides, so they are installed once in a
`deps` venv; each side's venv sees them through a `.pth` file and holds only its own TVM and
tvm-ffi, which come first on sys.path.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from tvmfork import proc, ui

MARKER = "tvmfork-venv.json"


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
    if marker.is_file() and json.loads(marker.read_text()) == json.loads(json.dumps(want)):
        return python_of(venv)
    with ui.step(f"venv {venv.name}: {' '.join(requirements)}"):
        proc.run([python, "-m", "venv", "--clear", venv])
        if deps_venv is not None:
            (site_packages(venv) / "tvmfork-deps.pth").write_text(
                str(site_packages(deps_venv)) + "\n"
            )
        proc.run(
            [
                python_of(venv),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                *requirements,
            ]
        )
        marker.write_text(json.dumps(want))
    return python_of(venv)
