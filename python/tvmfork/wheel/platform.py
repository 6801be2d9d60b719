"""The platform tag a built wheel really satisfies, from auditwheel.

A source build on this machine is tagged `linux_x86_64`, which pip installs anywhere; on an
older distribution `import tvm` then fails on a missing GLIBC or GLIBCXX symbol version.
`auditwheel show` reads the symbol versions the wheel's libraries need and names the oldest
manylinux policy that provides them (its `sym_tag`); the wheel is retagged with it, so pip
refuses it where it cannot run. Libraries the wheel needs from outside are allowed only where
upstream's own wheels need them too: libtvm_ffi (a separate package, excluded from
auditwheel's repair by upstream), and the CUDA driver and runtime for the sidecar.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from tvmfork import proc, venvs
from tvmfork.errors import VerifyError

AUDITWHEEL = "auditwheel==6.8.2"
ALWAYS_EXTERNAL = ("libtvm_ffi.so",)
CUDA_EXTERNAL = ("libcuda.so", "libcudart.so")


@dataclass(frozen=True)
class Audit:
    platform_tag: str  # e.g. manylinux_2_36_x86_64
    external: tuple[str, ...]

    @property
    def glibc(self) -> str:
        m = re.match(r"manylinux_(\d+)_(\d+)_", self.platform_tag)
        return f"{m.group(1)}.{m.group(2)}" if m else ""


def tool(cache_dir: Path, python: str) -> Path:
    """auditwheel in a tool venv of the cache."""
    venv = cache_dir / "venvs" / f"auditwheel-{venvs.key(AUDITWHEEL)}"
    return venvs.ensure(venv, [AUDITWHEEL], python=python).parent / "auditwheel"


def audit(wheel: Path, auditwheel: Path, cuda: bool) -> Audit:
    """What auditwheel says of `wheel`; a library needed from outside that upstream's wheels
    do not need is a VerifyError."""
    out = proc.run([auditwheel, "show", "--json", wheel]).stdout
    data = json.loads(out[out.index("{") :])
    allowed = ALWAYS_EXTERNAL + (CUDA_EXTERNAL if cuda else ())
    external = tuple(sorted(data.get("external_libs") or {}))
    unexpected = [lib for lib in external if not lib.startswith(allowed)]
    if unexpected:
        raise VerifyError(
            f"{wheel.name} needs libraries that are not part of it and not on the manylinux "
            f"allow list: {', '.join(unexpected)} (only {', '.join(allowed)} may be external)"
        )
    tag = data.get("sym_tag") or ""
    if not tag.startswith("manylinux_"):
        raise VerifyError(f"auditwheel gave {wheel.name} no manylinux policy (sym_tag {tag!r})")
    return Audit(tag, external)


def retagged_name(name: str, platform_tag: str) -> str:
    """`name` (a wheel file name) with its platform tag replaced."""
    stem = name.removesuffix(".whl")
    parts = stem.split("-")
    return "-".join([*parts[:-1], platform_tag]) + ".whl"


def retag_wheel_file(text: str, platform_tag: str) -> str:
    """The WHEEL metadata with every `Tag:` line on `platform_tag`."""
    return re.sub(r"(?m)^Tag: ([^-\s]+)-([^-\s]+)-\S+$", rf"Tag: \1-\2-{platform_tag}", text)
