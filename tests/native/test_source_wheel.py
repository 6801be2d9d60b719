"""The source-built wheel: what it says it is, and what its libraries need."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from tvmfork import linkage, variants

from .conftest import REPO, Native


def test_manifest_says_source_and_every_patch(native: Native) -> None:
    with zipfile.ZipFile(native.wheel) as zf:
        man = json.loads(zf.read("tvm/fork_manifest.json"))
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(meta).decode()
    assert man["mode"] == "source" and man["variant"] == native.variant
    assert man["upstream"]["commit"] == native.lock.commit
    assert [p["name"] for p in man["patches"]] == [p.name for p in native.series.patches]
    assert all(p["included"] for p in man["patches"])
    assert {"compiler", "cmake", "ninja"} <= set(man["toolchain"])
    assert f"Requires-Dist: apache-tvm-ffi{native.lock.tvm_ffi_requirement}\n" in metadata


def test_linkage(native: Native, tmp_path: Path) -> None:
    variant = variants.load(REPO / "build", native.variant)
    libs = linkage.wheel_libraries(native.wheel, tmp_path)
    assert any(lib.name.endswith("libtvm_compiler.so") for lib in libs)
    with zipfile.ZipFile(native.wheel) as zf:
        man = json.loads(zf.read("tvm/fork_manifest.json"))
    major = str(man["toolchain"].get("cuda", "0")).split(".")[0]
    rules = {k: [v.format(cuda_major=major) for v in vs] for k, vs in variant.linkage.items()}
    sidecar = variant.sidecar.library if variant.sidecar else None
    assert linkage.problems(libs, rules, sidecar) == [], linkage.render(libs)
