"""Multi-ISA builds against host-ISA builds (not a test): speed, compile time, library size.

TVM compiles for one CPU: `llvm` alone means the x86-64 baseline (SSE2, 4-wide vectors, no
FMA), and naming the host's CPU gives code that dies with SIGILL on an older one. The fork's
patch `build-each-kernel-for-every-x86-64-level-mcpu-lists` lets an `llvm` target's `mcpu`
list x86-64 levels, e.g. {"kind": "llvm", "mcpu": "x86-64,x86-64-v3,x86-64-v4"}: every kernel
is built once per level and the model calls the highest level the running CPU supports.

For each case of a conformance suite, this builds the model for the host's ISA
(`Target.from_device("cpu")`) and for the levels asked, exports both libraries, checks both
against PyTorch, and times PyTorch eager and both libraries interleaved in one run:

    FORK=~/.cache/tvmfork/venvs/fork/bin/python
    $FORK scripts/multi_isa.py torchvision -k resnet18,mobilenet_v2 [--levels ...]
    $FORK scripts/multi_isa.py transformers-bench -k bert-base

Run it with the fork venv's Python (the fork's TVM and torch==2.13.0); 1 thread unless
TVM_NUM_THREADS says otherwise. `-k` takes globs as `tvmfork conformance -k` does.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import profile_model
from casework.catalog import globs, pick  # type: ignore[import-not-found]
from casework.targets import X86_LEVELS  # type: ignore[import-not-found]
from casework.timing import interleaved  # type: ignore[import-not-found]

MAX_REL_ERR = 1e-3  # the conformance lane's bound for a model against PyTorch
LEVELS = ",".join(X86_LEVELS)


def _max_rel_err(out: Any, ref: Any) -> float:
    import numpy as np

    return float(np.abs(out - ref).max() / max(float(np.abs(ref).max()), 1e-30))


def _output(value: Any) -> Any:
    return (value if hasattr(value, "numpy") else value[0]).numpy()


def _build(mod: Any, target: Any, path: Path) -> tuple[Any, float, float]:
    """A VM on the exported and reloaded library; compile seconds; library MB."""
    import tvm
    from tvm import relax

    start = time.perf_counter()
    tvm.compile(mod, target=target).export_library(str(path))
    seconds = time.perf_counter() - start
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(path)), tvm.cpu())
    return vm, seconds, path.stat().st_size / 1e6


def bench_case(suite: str, name: str, levels: str, reps: int) -> dict[str, float]:
    import torch
    import tvm
    from tvm.relax.frontend.torch import from_exported_program

    torch.manual_seed(0)
    model, inputs = profile_model.load_case(suite, name)[:2]
    model = model.eval()
    with torch.no_grad():
        mod = from_exported_program(
            torch.export.export(model, tuple(inputs)), keep_params_as_input=False
        )
        out = model(*inputs)
        ref = (out if isinstance(out, torch.Tensor) else out[0]).numpy()
    targets = {
        "host": tvm.target.Target.from_device("cpu"),
        "multi": tvm.target.Target({"kind": "llvm", "mcpu": levels}),
    }
    args = [tvm.runtime.tensor(x.numpy()) for x in inputs]
    row: dict[str, float] = {}
    vms = {}
    with tempfile.TemporaryDirectory() as tmp:
        for side, target in targets.items():
            vms[side], row[f"{side}_compile_s"], row[f"{side}_mb"] = _build(
                mod, target, Path(tmp) / f"{side}.so"
            )
            err = _max_rel_err(_output(vms[side]["main"](*args)), ref)
            if err > MAX_REL_ERR:
                raise RuntimeError(f"{name} ({side}): max relative error {err:.2e} vs PyTorch")

        def eager() -> None:
            with torch.no_grad():
                model(*inputs)

        fns = {side: (lambda vm=vm: vm["main"](*args)) for side, vm in vms.items()}
        threads = int(os.environ["TVM_NUM_THREADS"])
        row.update(interleaved({**fns, "torch": eager}, reps, threads=threads))
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("suite", choices=sorted(profile_model.SUITES))
    ap.add_argument("-k", action="append", metavar="GLOB[,GLOB]", help="cases (default all)")
    ap.add_argument("--levels", default=LEVELS, help=f"the mcpu list (default {LEVELS})")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args(argv)
    os.environ.setdefault("TVM_NUM_THREADS", "1")  # read when TVM's thread pool starts
    import torch
    import tvm

    torch.set_num_threads(int(os.environ["TVM_NUM_THREADS"]))
    try:  # a level list the fork refuses: said before any model is built
        from tvm.relax.backend.cpu_generic import cpu_levels
    except ImportError:
        print(
            "error: this TVM has no multi-level builds (the fork's patch "
            "build-each-kernel-for-every-x86-64-level-mcpu-lists)",
            file=sys.stderr,
        )
        return 2
    try:
        if cpu_levels(tvm.target.Target({"kind": "llvm", "mcpu": a.levels})) is None:
            raise ValueError(f"--levels {a.levels!r} names one level: list two or more")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    cases = profile_model.case_names(a.suite)
    names = pick(cases, globs(a.k or []))
    host = tvm.target.Target.from_device("cpu")
    print(
        f"CPU {profile_model.cpu_model()}; host target {host}; levels {a.levels}; "
        f"TVM_NUM_THREADS {os.environ['TVM_NUM_THREADS']}\n"
    )
    print(
        "| model | PyTorch ms | host ms | multi ms | multi/host | host/PyTorch | "
        "compile s host, multi | library MB host, multi |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    logs: list[float] = []
    for name in names:
        try:
            r = bench_case(a.suite, name, a.levels, a.reps)
        except Exception as e:  # pylint: disable=broad-except  (reported; the others go on)
            print(f"| {name} | error: {type(e).__name__}: {str(e)[:120]} |", flush=True)
            continue
        ratio = r["multi_ms"] / r["host_ms"]
        logs.append(math.log(ratio))
        print(
            f"| {name} | {r['torch_ms']:.2f} | {r['host_ms']:.2f} | {r['multi_ms']:.2f} | "
            f"{ratio:.2f} | {r['host_ms'] / r['torch_ms']:.2f} | "
            f"{r['host_compile_s']:.1f}, {r['multi_compile_s']:.1f} | "
            f"{r['host_mb']:.1f}, {r['multi_mb']:.1f} |",
            flush=True,
        )
    if logs:
        print(
            f"\nmulti/host geometric mean over {len(logs)} models: "
            f"{math.exp(statistics.mean(logs)):.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
