"""`tvmfork info`: what TVM the current environment has, read without importing it."""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

STOCK_NOTE = "stock (no fork manifest)"


def tvm_package_dir() -> Path | None:
    spec = importlib.util.find_spec("tvm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def gather() -> dict[str, Any]:
    pkg = tvm_package_dir()
    out: dict[str, Any] = {"tvm": None, "tvm_ffi": None, "manifest": None}
    if pkg is None:
        return out
    try:
        out["tvm"] = md.version("apache-tvm")
    except md.PackageNotFoundError:
        out["tvm"] = "unknown (not installed from a wheel)"
    man = pkg / "fork_manifest.json"
    if man.is_file():
        out["manifest"] = json.loads(man.read_text())
    try:
        ffi = md.version("apache-tvm-ffi")
        out["tvm_ffi"] = ffi
        req = (out["manifest"] or {}).get("tvm_ffi_requirement")
        if req:
            out["tvm_ffi_in_range"] = Version(ffi) in SpecifierSet(req, prereleases=True)
    except md.PackageNotFoundError:
        pass
    out["location"] = str(pkg)
    return out


def render(data: dict[str, Any]) -> str:
    if data["tvm"] is None:
        return "no TVM is installed in this environment"
    lines = [f"apache-tvm {data['tvm']} at {data['location']}"]
    man = data["manifest"]
    ffi = data["tvm_ffi"] or "not installed"
    if man is None:
        lines.append(f"  {STOCK_NOTE}")
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
