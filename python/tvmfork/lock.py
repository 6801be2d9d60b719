"""The lock: which upstream the series applies to, and which stock wheels it overlays.

`patches/lock.toml` names the upstream repository, tag, commit and tree, each submodule's
commit, the stock wheel files with their sha256, and the tvm-ffi range that wheels of this
fork declare (BUGS.md section 0: the range is an ABI contract).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from tvmfork.errors import PatchError

SHA_RE = re.compile(r"^[0-9a-f]{40}$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Submodule:
    path: str
    url: str
    commit: str
    required: bool
    """Needed to build (initialized by `checkout` unless told otherwise)."""


@dataclass(frozen=True)
class WheelFile:
    filename: str
    sha256: str


@dataclass(frozen=True)
class Lock:
    url: str
    tag: str
    commit: str
    tree: str
    version: str
    submodules: tuple[Submodule, ...]
    wheel_project: str
    wheel_files: tuple[WheelFile, ...]
    ffi_built_with: str
    ffi_compatible: tuple[str, ...]
    ffi_incompatible: tuple[str, ...]
    path: Path = field(compare=False)

    @property
    def tvm_ffi_requirement(self) -> str:
        """`>=built_with,<X`, X the release of the oldest incompatible tvm-ffi."""
        spec = f">={self.ffi_built_with}"
        if self.ffi_incompatible:
            oldest = min(Version(v) for v in self.ffi_incompatible)
            spec += f",<{oldest.base_version}"
        return spec

    def ffi_table_problems(self) -> list[str]:
        """Listed versions that the derived requirement would classify wrongly."""
        spec = SpecifierSet(self.tvm_ffi_requirement)
        out = [
            f"tvm-ffi {v} is listed compatible but outside {spec}"
            for v in self.ffi_compatible
            if Version(v) not in spec
        ]
        out += [
            f"tvm-ffi {v} is listed incompatible but inside {spec}"
            for v in self.ffi_incompatible
            if Version(v) in spec
        ]
        if self.ffi_built_with not in self.ffi_compatible:
            out.append(f"tvm-ffi {self.ffi_built_with} (built_with) is not listed compatible")
        return out

    def submodule(self, path: str) -> Submodule | None:
        return next((s for s in self.submodules if s.path == path), None)

    def wheel_file(self, filename: str) -> WheelFile | None:
        return next((w for w in self.wheel_files if w.filename == filename), None)


def _req(table: dict[str, Any], key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value:
        raise PatchError(f"{where}: missing or empty {key!r}")
    return value


def _sha(value: str, where: str, pattern: re.Pattern[str] = SHA_RE) -> str:
    if not pattern.match(value):
        raise PatchError(f"{where}: {value!r} is not a full lowercase hash")
    return value


def load(path: Path) -> Lock:
    if not path.is_file():
        raise PatchError(f"no lock file at {path}")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise PatchError(f"{path}: {exc}") from exc
    up = data.get("upstream", {})
    subs = tuple(
        Submodule(
            path=_req(s, "path", f"{path} [[submodule]]"),
            url=_req(s, "url", f"{path} [[submodule]]"),
            commit=_sha(_req(s, "commit", f"{path} [[submodule]]"), f"{path} submodule"),
            required=bool(s.get("required", False)),
        )
        for s in data.get("submodule", [])
    )
    wheel = data.get("stock_wheel", {})
    files = tuple(
        WheelFile(
            filename=_req(w, "filename", f"{path} [[stock_wheel.file]]"),
            sha256=_sha(_req(w, "sha256", f"{path} stock wheel"), f"{path}", SHA256_RE),
        )
        for w in wheel.get("file", [])
    )
    ffi = data.get("tvm_ffi", {})
    return Lock(
        url=_req(up, "url", f"{path} [upstream]"),
        tag=_req(up, "tag", f"{path} [upstream]"),
        commit=_sha(_req(up, "commit", f"{path} [upstream]"), f"{path} [upstream] commit"),
        tree=_sha(_req(up, "tree", f"{path} [upstream]"), f"{path} [upstream] tree"),
        version=_req(up, "version", f"{path} [upstream]"),
        submodules=subs,
        wheel_project=_req(wheel, "project", f"{path} [stock_wheel]"),
        wheel_files=files,
        ffi_built_with=_version(_req(ffi, "built_with", f"{path} [tvm_ffi]"), path),
        ffi_compatible=tuple(_version(v, path) for v in ffi.get("compatible", [])),
        ffi_incompatible=tuple(_version(v, path) for v in ffi.get("incompatible", [])),
        path=path,
    )


def _version(value: Any, path: Path) -> str:
    try:
        Version(str(value))
    except InvalidVersion as exc:
        raise PatchError(f"{path} [tvm_ffi]: {value!r} is not a version") from exc
    return str(value)
