"""The targets a conformance run can name, in one table: what the worker compiles for, where
the compiled case runs, and what a user reads in `--help`.

Standard library only: tvmfork reads it to check and resolve `--target`; the worker and the
scripts (which run in the TVM venvs) read the x86-64 levels from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

# The x86-64 psABI levels a portable library carries a kernel for (the fork's patch
# build-each-kernel-for-every-x86-64-level-mcpu-lists; the best the running CPU supports is
# called). Stock warns that such an mcpu is not valid and compiles for the generic CPU.
X86_LEVELS = ("x86-64", "x86-64-v3", "x86-64-v4")
PORTABLE = {"kind": "llvm", "mcpu": ",".join(X86_LEVELS)}

CUDA_ARCHS = ("sm_80", "sm_89", "sm_90")  # A100, L4/L40/RTX 40, H100/H200


@dataclass(frozen=True)
class Target:
    """A named target. `worker`: what the worker gives tvm.target.Target ("host": the
    worker's own CPU, resolved where it runs; a target string; a JSON object). `runs`:
    "here" (this machine), "rpc" (a device of an RPC tracker, the library linked by
    `cross_cc`) or "assemble" (compile-only: each CUDA kernel assembled by nvcc, not run)."""

    worker: str
    runs: str
    help: str
    cross_cc: str = ""


TARGETS = {
    "llvm": Target("llvm", "here", "the generic x86-64 CPU (SSE2), as TVM's default llvm target"),
    "host": Target("host", "here", "this machine's ISA (Target.from_device('cpu'))"),
    "portable": Target(
        json.dumps(PORTABLE),
        "here",
        f"one library with kernels for {', '.join(X86_LEVELS)} (the best the CPU runs called)",
    ),
    "aarch64": Target(
        json.dumps({"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mattr": ["+neon"]}),
        "rpc",
        "64-bit Arm Linux with NEON, run on a device of --rpc-tracker (or --emulated N)",
        cross_cc="aarch64-linux-gnu-g++",
    ),
    "cuda": Target(
        "cuda",
        "assemble",
        "NVIDIA GPUs, compile-only: compiled for the first of --cuda-archs, each kernel "
        "assembled by nvcc for each one, not run",
    ),
}


def describe() -> str:
    """The table as `--help` gives it."""
    return "; ".join(f"{name}: {t.help}" for name, t in TARGETS.items())
