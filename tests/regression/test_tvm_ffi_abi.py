"""Packaging: the fork pins an ABI-compatible apache-tvm-ffi and refuses a mismatch at import
(BUGS.md section 0, apache/tvm#20094).

Each case runs in a subprocess, with a tvm-ffi installed into a scratch folder that shadows the
environment's own (PYTHONPATH comes before site-packages), so a segfault is a result.

On stock 0.26.0 the wheel declares only `apache-tvm-ffi>=0.1.13.post2`, pip picks 0.1.15.x and
dlight's MatmulTensorization segfaults; the fork declares the tested range, and an import
with a tvm-ffi outside it raises ImportError instead.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata as md
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

LOCK = Path(__file__).resolve().parents[2] / "patches" / "lock.toml"
FFI_TABLE = tomllib.loads(LOCK.read_text())["tvm_ffi"]
COMPATIBLE, INCOMPATIBLE = FFI_TABLE["compatible"], FFI_TABLE["incompatible"]

# fp16 1x1 conv (an MLC-LLM vision tower) through dlight's Matmul rule, scheduled and compiled
# for sm_80. With a tvm-ffi of another ABI this segfaults in tvm::s_tir::Tensorize.
CRASH_CASE = """
import shutil, sys
COMPILE = sys.argv[1:] == ["compile"]
import tvm
from tvm import relax
from tvm.s_tir import dlight as dl

bb = relax.BlockBuilder()
x = relax.Var("x", relax.TensorType((1, 768, 64, 64), "float16"))
w = relax.Var("w", relax.TensorType((256, 768, 1, 1), "float16"))
with bb.function("main", [x, w]):
    with bb.dataflow():
        y = bb.emit_output(bb.emit(relax.op.nn.conv2d(x, w, out_dtype="float16")))
    bb.emit_func_output(y)
mod = relax.transform.LegalizeOps()(bb.get())
target = tvm.target.Target({"kind": "cuda", "arch": "sm_80"})
with target:
    mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul())(mod)
print("scheduled", flush=True)
if COMPILE and shutil.which("nvcc"):
    tvm.compile(mod, target=target)
    print("compiled", flush=True)
"""


def declared_ffi_requirement() -> str:
    """The apache-tvm-ffi specifier of the TVM under test, as pip sees it."""
    for req in md.requires("apache-tvm") or []:
        m = re.match(r"^apache[-_.]tvm[-_.]ffi\s*([^;]*)$", req.strip())
        if m:
            return m.group(1).strip()
    raise AssertionError("the TVM under test declares no apache-tvm-ffi requirement")


@functools.cache
def ffi_dir(spec: str, tmp_root: str) -> Path:
    """apache-tvm-ffi resolved from `spec` the way `pip install` resolves it, in a folder."""
    target = Path(tmp_root) / hashlib.sha256(spec.encode()).hexdigest()[:16]
    if not target.is_dir():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--only-binary",
                ":all:",
                "--target",
                str(target),
                f"apache-tvm-ffi{spec}",
            ],
            check=True,
        )
    return target


def run_with_ffi(code: str, ffi: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "TVM_SKIP_FFI_VERSION_CHECK"}
    full_env = {**base, "PYTHONPATH": str(ffi), **env}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=600,
        check=False,
    )


def ffi_version_in(ffi: Path) -> str:
    dist = next(ffi.glob("apache_tvm_ffi-*.dist-info"))
    return dist.name.removeprefix("apache_tvm_ffi-").removesuffix(".dist-info")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("tvm-ffi"))


def assert_runs(ffi: Path, why: str, compile: bool) -> None:
    r = run_with_ffi(CRASH_CASE, ffi, *(["compile"] if compile else []))
    assert r.returncode == 0, (
        f"with apache-tvm-ffi {ffi_version_in(ffi)} ({why}) the crash-prone case exited "
        f"{r.returncode}:\n{r.stderr[-3000:]}"
    )
    assert "scheduled" in r.stdout
    if compile and shutil.which("nvcc"):
        assert "compiled" in r.stdout


def test_default_resolution_does_not_crash(scratch: str) -> None:
    """pip's pick for the TVM under test runs the crash-prone case to the end."""
    spec = declared_ffi_requirement()
    assert_runs(ffi_dir(spec, scratch), f"pip's pick for {spec!r}", compile=True)


@pytest.mark.parametrize("good", COMPATIBLE)
def test_compatible_table_entry_runs(scratch: str, good: str) -> None:
    """Every release the lock calls compatible really is (the table is tested, not trusted)."""
    # Scheduling is where an ABI mismatch crashes; compiling each one would add nothing.
    assert_runs(ffi_dir(f"=={good}", scratch), "listed compatible in patches/lock.toml", False)


@pytest.mark.parametrize("bad", INCOMPATIBLE)
def test_mismatched_ffi_is_refused_at_import(scratch: str, bad: str) -> None:
    ffi = ffi_dir(f"=={bad}", scratch)
    r = run_with_ffi("import tvm", ffi)
    assert r.returncode == 1, f"import tvm with apache-tvm-ffi {bad} exited {r.returncode}"
    assert "ImportError" in r.stderr
    assert bad in r.stderr and declared_ffi_requirement() in r.stderr
    assert f'pip install "apache-tvm-ffi{declared_ffi_requirement()}"' in r.stderr


@pytest.mark.parametrize("bad", INCOMPATIBLE)
def test_override_is_loud(scratch: str, bad: str) -> None:
    ffi = ffi_dir(f"=={bad}", scratch)
    r = run_with_ffi("import tvm; print('imported')", ffi, TVM_SKIP_FFI_VERSION_CHECK="1")
    assert r.returncode == 0 and "imported" in r.stdout, r.stderr[-2000:]
    assert "WARNING: TVM_SKIP_FFI_VERSION_CHECK is set" in r.stderr
