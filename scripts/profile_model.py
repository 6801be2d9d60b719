"""Where a model's time goes on TVM (not a test): per kernel, for the speed work of issue 31.

Compiles one case of a conformance suite (a torch-module file's CASES entry, through
torch.export as the lane does) for the host's ISA, runs it a few times with a VM
instrument that times every call the VM makes (kernels, allocations, packed functions), and
prints the CPU model, the end-to-end median, and the calls that take the most time, with
each one's share, calls per run and the kernel's TIR shape signature. Run it with the fork
venv's Python (TVM and torch==2.13.0); threads as TVM_NUM_THREADS says (default 1 here):

    FORK=~/.cache/tvmfork/venvs/fork/bin/python
    $FORK scripts/profile_model.py transformers-bench whisper-tiny-encoder [--top 20]
    $FORK scripts/profile_model.py torchvision resnet18 --target llvm

The instrument's own cost (two Python calls per VM call, a few microseconds) is in each
call's time: read shares of kernels that take tens of microseconds or more.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import statistics
import subprocess
import sys
import time

import _paths  # noqa: F401  (the conformance worker's folder on sys.path)
from casework.catalog import TORCH_MODULES as SUITES  # type: ignore[import-not-found]
from casework.timing import samples_ms  # type: ignore[import-not-found]


def cpu_model() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    return next((ln.split(":", 1)[1].strip() for ln in out.splitlines() if "Model name" in ln), "?")


def _suite(suite: str):  # type: ignore[no-untyped-def]
    import torchvision_shim  # type: ignore[import-not-found]  (the suites import it by name)

    torchvision_shim.load()
    path = SUITES[suite]
    spec = importlib.util.spec_from_file_location(f"suite_{suite.replace('-', '_')}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def case_names(suite: str) -> list[str]:
    """The names of a suite's cases, in its order."""
    return list(_suite(suite).CASES)


def load_case(suite: str, name: str):  # type: ignore[no-untyped-def]
    cases = _suite(suite).CASES
    if name not in cases:
        raise SystemExit(f"{suite} has no case {name!r}; it has: {', '.join(cases)}")
    return cases[name]()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("suite", choices=sorted(SUITES))
    ap.add_argument("case")
    ap.add_argument("--target", default="host", help="host (the default) or a TVM target")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    os.environ.setdefault("TVM_NUM_THREADS", "1")

    import numpy as np
    import torch
    import tvm
    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    torch.manual_seed(0)
    torch.set_num_threads(int(os.environ["TVM_NUM_THREADS"]))
    model, inputs = load_case(a.suite, a.case)[:2]
    with torch.no_grad():
        exported = torch.export.export(model.eval(), tuple(inputs))
    mod = from_exported_program(exported, keep_params_as_input=False)
    target = tvm.target.Target.from_device("cpu") if a.target == "host" else a.target
    t = time.perf_counter()
    ex = tvm.compile(mod, target=target)
    compile_s = time.perf_counter() - t
    vm = relax.VirtualMachine(ex, tvm.cpu())
    args = [tvm.runtime.tensor(x.detach().numpy()) for x in inputs]
    vm["main"](*args)

    calls: dict[str, list[float]] = collections.defaultdict(list)
    shapes: dict[str, str] = {}
    started: list[float] = []

    def instrument(func, name, before, ret, *call_args):  # type: ignore[no-untyped-def]
        if before:
            started.append(time.perf_counter())
            return 0
        calls[name].append(time.perf_counter() - started.pop())
        if name not in shapes:
            dims = [tuple(x.shape) for x in call_args if hasattr(x, "shape")]
            shapes[name] = " ".join("x".join(map(str, d)) for d in dims)[:70]
        return 0

    def eager() -> None:
        with torch.no_grad():
            model(*inputs)

    threads = int(os.environ["TVM_NUM_THREADS"])
    timed = samples_ms({"tvm": lambda: vm["main"](*args), "torch": eager}, a.runs, threads=threads)
    ends, eager_ms = timed["tvm"], timed["torch"]
    vm.set_instrument(instrument)
    for _ in range(a.runs):
        vm["main"](*args)

    per_run = {k: sum(v) / a.runs * 1e3 for k, v in calls.items()}
    total = sum(per_run.values())
    print(f"CPU {cpu_model()}; target {target}; TVM_NUM_THREADS {os.environ['TVM_NUM_THREADS']}")
    print(
        f"{a.suite}/{a.case}: compile {compile_s:.1f} s; median run {statistics.median(ends):.2f}"
        f" ms (PyTorch eager {statistics.median(eager_ms):.2f} ms, one thread count as above); "
        f"instrumented calls {total:.2f} ms a run"
    )
    print(f"{'ms/run':>8} {'share':>6} {'calls':>5}  function  (argument shapes)")
    for name, ms in sorted(per_run.items(), key=lambda kv: -kv[1])[: a.top]:
        n = len(calls[name]) // a.runs
        print(f"{ms:8.3f} {ms / total:6.1%} {n:5d}  {name}  ({shapes.get(name, '')})")
    del np
    return 0


if __name__ == "__main__":
    sys.exit(main())
