"""The linkage check of a built wheel: what each shared library needs (readelf NEEDED).

A cpu wheel must need no CUDA library at all; the cuda sidecar must need the driver and the
toolkit runtime it was built for and nothing unexpected (upstream once shipped a sidecar that
had silently lost libcuda.so.1, apache/tvm#19754).
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tvmfork import proc


@dataclass(frozen=True)
class Library:
    name: str
    needed: list[str]
    runpath: str


def read(path: Path, name: str | None = None) -> Library:
    out = proc.run(["readelf", "-d", path]).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    runpath = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^\]]*)\]", out)
    return Library(name or path.name, needed, ":".join(runpath))


def wheel_libraries(wheel: Path, scratch: Path) -> list[Library]:
    libs = []
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if re.search(r"\.so(\.\d+)*$", info.filename):
                target = scratch / info.filename
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(info))
                libs.append(read(target, info.filename))
    return libs


def problems(libs: list[Library], rules: dict[str, list[str]], sidecar: str | None) -> list[str]:
    """What breaks the variant's rules; empty when the wheel is sound."""
    out: list[str] = []
    by_name = {lib.name.rsplit("/", 1)[-1]: lib for lib in libs}
    side = by_name.get(sidecar.rsplit("/", 1)[-1]) if sidecar else None
    if sidecar and side is None:
        out.append(f"the wheel has no {sidecar}")
    for lib in libs:
        banned = rules.get("others_forbidden" if side else "forbidden", [])
        if lib is side:
            continue
        for need in lib.needed:
            if any(need.startswith(b) for b in banned):
                out.append(f"{lib.name} needs {need}, which this variant must not need")
    if side is not None:
        for req in rules.get("sidecar_required", []):
            if req not in side.needed:
                out.append(f"{side.name} does not need {req} (needed: {', '.join(side.needed)})")
        allowed = set(rules.get("sidecar_allowed", [])) | set(rules.get("sidecar_required", []))
        for need in side.needed:
            if need not in allowed:
                out.append(f"{side.name} needs an unexpected library: {need}")
        if "$ORIGIN" not in side.runpath:
            out.append(f"{side.name} has no $ORIGIN runpath (has {side.runpath or 'none'})")
    return out


def render(libs: list[Library]) -> str:
    return "\n".join(
        f"  {lib.name}: {' '.join(lib.needed)}"
        + (f"  [runpath {lib.runpath}]" if lib.runpath else "")
        for lib in libs
    )
