"""`tvmfork info`: what TVM an environment has, read without importing TVM.

The probe runs in the interpreter asked about (by default this one) and uses only the
standard library, so it works in any environment, including one whose TVM would crash.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from tvmfork import proc
from tvmfork.errors import UsageError

PROBE = r"""
import importlib.metadata as md, importlib.util, json, pathlib
out = {"tvm": None, "tvm_ffi": None, "manifest": None, "location": None}
spec = importlib.util.find_spec("tvm")
if spec is not None and spec.submodule_search_locations:
    pkg = pathlib.Path(next(iter(spec.submodule_search_locations)))
    out["location"] = str(pkg)
    try:
        out["tvm"] = md.version("apache-tvm")
    except md.PackageNotFoundError:
        out["tvm"] = "unknown (not installed from a wheel)"
    man = pkg / "fork_manifest.json"
    if man.is_file():
        out["manifest"] = json.loads(man.read_text())
    try:
        out["tvm_ffi"] = md.version("apache-tvm-ffi")
    except md.PackageNotFoundError:
        pass
print(json.dumps(out))
"""


def interpreter(python: str | None) -> tuple[str, str]:
    """The interpreter whose TVM the user means, and how it was chosen: `--python` (an
    interpreter or a venv folder), else the active venv ($VIRTUAL_ENV), else the `python3` on
    PATH, else tvmfork's own."""
    if python:
        path = Path(python)
        if path.is_dir():
            for exe in (path / "bin" / "python", path / "Scripts" / "python.exe"):
                if exe.is_file():
                    return str(exe), f"--python {python} (a venv)"
            raise UsageError(
                f"--python {python}: a folder with no bin/python; name a venv or an interpreter"
            )
        if not path.is_file() and shutil.which(python) is None:
            raise UsageError(f"--python {python}: no such interpreter")
        return python, "--python"
    venv = os.environ.get("VIRTUAL_ENV")
    if venv and Path(venv).resolve() != Path(sys.prefix).resolve():
        exe = Path(venv) / "bin" / "python"
        if exe.is_file():
            return str(exe), "the active venv ($VIRTUAL_ENV)"
    for name in ("python3", "python"):
        found = shutil.which(name)
        if found and Path(found).resolve().parent != Path(sys.executable).resolve().parent:
            return found, f"the {name} on PATH"
    return sys.executable, "tvmfork's own interpreter (no venv active, no other python on PATH)"


def gather(python: str | None = None) -> dict[str, Any]:
    exe, why = interpreter(python)
    r = proc.run([exe, "-c", PROBE], check=False)
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    if r.returncode != 0 or not last.startswith("{"):
        raise UsageError(
            f"cannot inspect the environment of {exe}: it exited with "
            f"{r.returncode}:\n    {last or '(no output)'}"
        )
    data: dict[str, Any] = json.loads(last)
    data["python"] = exe
    data["chosen"] = why
    req = (data["manifest"] or {}).get("tvm_ffi_requirement")
    if req and data["tvm_ffi"]:
        try:
            data["tvm_ffi_in_range"] = Version(data["tvm_ffi"]) in SpecifierSet(req)
        except InvalidVersion:
            data["tvm_ffi_in_range"] = False
    return data


def render(data: dict[str, Any]) -> str:
    where = f"{data['python']} ({data['chosen']}; --python PATH inspects another)"
    if data["tvm"] is None:
        return f"no TVM is installed for {where}"
    lines = [f"apache-tvm {data['tvm']} at {data['location']}", f"  python: {where}"]
    man = data["manifest"]
    ffi = data["tvm_ffi"] or "not installed"
    if man is None:
        lines.append("  stock TVM (no fork manifest)")
        lines.append(f"  apache-tvm-ffi {ffi}")
        return "\n".join(lines)
    up = man["upstream"]
    lines.append(f"  tvmfork {man['mode']} build, variant {man['variant']}")
    lines.append(f"  upstream {up['tag']} {up['commit']}")
    verdict = "in range" if data.get("tvm_ffi_in_range") else "OUT OF RANGE"
    lines.append(f"  apache-tvm-ffi {ffi} ({verdict}: {man['tvm_ffi_requirement']})")
    plat = man.get("platform")
    if plat:
        glibc = f" (needs glibc >= {plat['glibc']})" if plat.get("glibc") else ""
        lines.append(f"  platform: {plat['tag']}{glibc}")
    for key in ("build", "toolchain"):
        if key in man:
            lines.append(f"  {key}: {json.dumps(man[key], sort_keys=True)}")
    lines.append(f"  patches ({len(man['patches'])}):")
    for p in man["patches"]:
        state = "included" if p["included"] else "LEFT OUT"
        kind = "native" if p["native"] else "python"
        lines.append(f"    {state:8} {kind:6} {p['sha256'][:12]} {p['name']}")
    return "\n".join(lines)
