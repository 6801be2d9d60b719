"""Build variants as data: `build/<name>.toml` (CMake defines, the CUDA sidecar, linkage rules).

Values may hold `{placeholders}` that the source build fills from the toolchain it found; an
unknown placeholder or key is an error naming the file.
"""

from __future__ import annotations

import string
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tvmfork.errors import UsageError

KEYS = {"description", "cmake", "sidecar", "linkage"}
SIDECAR_KEYS = {"targets", "library", "cuda_architectures", "cmake"}
LINKAGE_KEYS = {"forbidden", "sidecar_required", "sidecar_allowed", "others_forbidden"}


@dataclass(frozen=True)
class Sidecar:
    targets: list[str]
    library: str
    cuda_architectures: str
    cmake: dict[str, str]


@dataclass(frozen=True)
class Variant:
    name: str
    path: Path
    description: str
    cmake: dict[str, str]
    sidecar: Sidecar | None
    linkage: dict[str, list[str]] = field(default_factory=dict)

    def placeholders(self) -> set[str]:
        values = list(self.cmake.values()) + [v for vs in self.linkage.values() for v in vs]
        if self.sidecar:
            values += list(self.sidecar.cmake.values())
        return {f for v in values for _, f, _, _ in string.Formatter().parse(v) if f}


def fill(table: dict[str, str], values: dict[str, str]) -> dict[str, str]:
    return {k: v.format(**values) for k, v in table.items()}


def _strings(data: Any, where: str) -> dict[str, str]:
    if not isinstance(data, dict):
        raise UsageError(f"{where} must be a table")
    return {str(k): str(v).upper() if isinstance(v, bool) else str(v) for k, v in data.items()}


def _unknown(data: dict[str, Any], known: set[str], where: str) -> None:
    extra = sorted(set(data) - known)
    if extra:
        raise UsageError(f"{where}: unknown key(s) {', '.join(extra)}; known: {sorted(known)}")


def load(build_dir: Path, name: str) -> Variant:
    path = build_dir / f"{name}.toml"
    if not path.is_file():
        have = sorted(p.stem for p in build_dir.glob("*.toml"))
        raise UsageError(f"no build variant {name!r} ({path} missing); variants: {have}")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: {exc}") from exc
    _unknown(data, KEYS, str(path))
    sidecar = None
    if "sidecar" in data:
        sc = data["sidecar"]
        _unknown(sc, SIDECAR_KEYS, f"{path} [sidecar]")
        sidecar = Sidecar(
            targets=[str(t) for t in sc.get("targets", [])],
            library=str(sc["library"]),
            cuda_architectures=str(sc.get("cuda_architectures", "")),
            cmake=_strings(sc.get("cmake", {}), f"{path} [sidecar.cmake]"),
        )
    linkage = data.get("linkage", {})
    _unknown(linkage, LINKAGE_KEYS, f"{path} [linkage]")
    variant = Variant(
        name=name,
        path=path,
        description=str(data.get("description", "")),
        cmake=_strings(data.get("cmake", {}), f"{path} [cmake]"),
        sidecar=sidecar,
        linkage={k: [str(x) for x in v] for k, v in linkage.items()},
    )
    return variant
