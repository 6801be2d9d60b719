"""`tvmfork info`: what TVM an environment has, read without importing TVM.

The probe runs in the interpreter asked about (by default this one) and uses only the
standard library, so it works in any environment, including one whose TVM would crash.
"""

from __future__ import annotations

import json
import sys
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


def gather(python: str | None = None) -> dict[str, Any]:
    exe = python or sys.executable
    r = proc.run([exe, "-c", PROBE], check=False)
    if r.returncode != 0:
        raise UsageError(f"cannot inspect the environment of {exe}:\n    {r.stdout.strip()}")
    data: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
    data["python"] = exe
    req = (data["manifest"] or {}).get("tvm_ffi_requirement")
    if req and data["tvm_ffi"]:
        try:
            data["tvm_ffi_in_range"] = Version(data["tvm_ffi"]) in SpecifierSet(req)
        except InvalidVersion:
            data["tvm_ffi_in_range"] = False
    return data


def render(data: dict[str, Any]) -> str:
    if data["tvm"] is None:
        return f"no TVM is installed for {data['python']}"
    lines = [f"apache-tvm {data['tvm']} at {data['location']}"]
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
    for key in ("build", "toolchain"):
        if key in man:
            lines.append(f"  {key}: {json.dumps(man[key], sort_keys=True)}")
    lines.append(f"  patches ({len(man['patches'])}):")
    for p in man["patches"]:
        state = "included" if p["included"] else "LEFT OUT"
        kind = "native" if p["native"] else "python"
        lines.append(f"    {state:8} {kind:6} {p['sha256'][:12]} {p['name']}")
    return "\n".join(lines)
