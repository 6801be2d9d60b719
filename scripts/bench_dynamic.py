"""Benchmark (not a test): a dynamic sequence length against static builds, per length.

For each model of the conformance lane's transformers suite named, one process compiles the
model once with its token dimension exported as a symbol (`torch.export.Dim`, as the
`NAME-dynamic` cases do) and once per length with that length static, then times, at each
length, the dynamic build, the static build of that length and PyTorch eager, their calls
interleaved (medians), after checking both builds against PyTorch. Run it with a TVM venv's
interpreter (the fork venv of `tvmfork envs`):

    FORK=~/.cache/tvmfork/venvs/fork/bin/python
    $FORK scripts/bench_dynamic.py llama bert --lengths 1,16,40 [--threads 1] [--target host]

It prints the CPU model (lscpu) and a table: per model and length, ms of PyTorch, static and
dynamic, and dynamic/static.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _paths  # noqa: F401  (the conformance worker's folder on sys.path)
from casework.timing import interleaved  # type: ignore[import-not-found]


def _suite() -> Any:
    import torchvision_shim  # transformers imports torchvision

    torchvision_shim.load()
    import transformers_models

    return transformers_models


def _compile(model: torch.nn.Module, ids: torch.Tensor, target: str, dynamic: bool) -> Any:
    import tvm
    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    suite = _suite()
    shapes = None
    if dynamic:
        seq = torch.export.Dim("seq", min=1, max=suite.MAX_LEN)
        shapes = (({1: seq},),)  # Wrapped.forward(*args)
    with torch.no_grad():
        exported = torch.export.export(model, (ids,), dynamic_shapes=shapes)
    mod = from_exported_program(exported, keep_params_as_input=False)
    tgt = tvm.target.Target.from_device("cpu") if target == "host" else tvm.target.Target(target)
    return relax.VirtualMachine(tvm.compile(mod, target=tgt), tvm.cpu())


def bench(name: str, lengths: list[int], target: str, reps: int) -> list[dict[str, Any]]:
    import tvm

    suite = _suite()
    torch.manual_seed(0)
    model, (example,) = suite.CASES[name]()[:2]
    dynamic = _compile(model, example, target, dynamic=True)
    rows = []
    for length in lengths:
        ids = example.repeat(1, -(-length // example.shape[1]))[:, :length]
        static = _compile(model, ids, target, dynamic=False)
        arg = tvm.runtime.tensor(ids.numpy())
        with torch.no_grad():
            want = model(ids).numpy()
        for build in (static, dynamic):
            out = build["main"](arg)
            got = (out if isinstance(out, tvm.runtime.Tensor) else out[0]).numpy()
            err = float(np.abs(got - want).max() / np.abs(want).max())
            if not err <= 1e-3:
                raise SystemExit(f"{name} at {length} tokens: relative error {err:.3g}")

        def eager(ids: torch.Tensor = ids) -> None:
            with torch.no_grad():
                model(ids)

        times = interleaved(
            {
                "torch": eager,
                "static": lambda s=static, a=arg: s["main"](a),
                "dynamic": lambda a=arg: dynamic["main"](a),
            },
            reps,
        )
        rows.append({"model": name, "length": length, **{k[:-3]: v for k, v in times.items()}})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", help="transformers suite cases (llama, bert, ...)")
    ap.add_argument("--lengths", default="1,16,40", help="token counts (default 1,16,40)")
    ap.add_argument("--target", default="llvm", help="llvm, or host for the host's ISA")
    ap.add_argument("--threads", type=int, help="threads for TVM and PyTorch alike")
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    if a.threads:
        import os

        os.environ["TVM_NUM_THREADS"] = str(a.threads)
        torch.set_num_threads(a.threads)
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    model_line = next((ln for ln in cpu.splitlines() if ln.startswith("Model name")), "")
    print(f"{model_line.strip()}; target {a.target}; threads {a.threads or 'default'}")
    print("| model | tokens | PyTorch ms | static ms | dynamic ms | dynamic/static |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in a.models:
        for r in bench(name, [int(n) for n in a.lengths.split(",")], a.target, a.reps):
            print(
                f"| {r['model']} | {r['length']} | {r['torch']:.2f} | {r['static']:.2f} | "
                f"{r['dynamic']:.2f} | {r['dynamic'] / r['static']:.2f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
