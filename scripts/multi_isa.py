"""Prototype: one model compiled for several x86-64 ISA levels, the level chosen at load time.

TVM compiles a model for one target. `llvm` with no CPU named means the x86-64 baseline
(SSE2: 4-wide vectors, no FMA), which runs anywhere and is about half as fast as the AVX2 code
the host's target gets; naming the host's CPU gives code that dies with SIGILL on an older
one. PyTorch and ONNX Runtime ship kernels for several ISAs and pick one at run time from the
CPU's features. This does the same per model: a *bundle* is a folder with one library per
x86-64 psABI level (`x86-64`, `x86-64-v2`, `x86-64-v3`, `x86-64-v4`), each `tvm.compile`d
with `{"kind": "llvm", "mcpu": LEVEL}`, and a `bundle.json` naming each level's required CPU
flags. `load` reads the running CPU's flags (Linux: /proc/cpuinfo) and loads the highest
level it supports; `TVMFORK_ISA=LEVEL` forces one, and a level the CPU lacks is refused
with the flags it misses instead of crashing on the first instruction it lacks.

    python scripts/multi_isa.py build MODEL OUT [--levels x86-64,x86-64-v3]  # torchvision model
    python scripts/multi_isa.py run OUT MODEL                 # load, run, compare with PyTorch
    python scripts/multi_isa.py bench [-k GLOB] [--threads 1] # PyTorch vs each level, one run

Run it with a Python that has the fork's TVM and torch==2.13.0 (the fork test venv). The
functions `build`, `choose` and `load` are the prototype's API; `choose` needs no TVM.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

# The x86-64 psABI micro-architecture levels, each with the /proc/cpuinfo flags it adds to
# the one before (lzcnt is "abm" there). LLVM accepts the level names as CPUs.
LEVELS: dict[str, tuple[str, ...]] = {
    "x86-64": ("sse", "sse2"),
    "x86-64-v2": ("cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"),
    "x86-64-v3": ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"),
    "x86-64-v4": ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"),
}
MANIFEST = "bundle.json"
ENV_FORCE = "TVMFORK_ISA"
MAX_REL_ERR = 1e-3  # the conformance lane's bound for a model against PyTorch


class BundleError(RuntimeError):
    """A bundle that cannot be built or loaded here, with the reason."""


def required_flags(level: str) -> list[str]:
    """Every CPU flag code compiled for `level` may use (its own and the levels below it)."""
    if level not in LEVELS:
        raise BundleError(f"unknown ISA level {level!r}: one of {', '.join(LEVELS)}")
    names = list(LEVELS)
    return [f for lv in names[: names.index(level) + 1] for f in LEVELS[lv]]


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The running CPU's feature flags, as the kernel reports them."""
    try:
        text = cpuinfo.read_text()
    except OSError as e:
        raise BundleError(f"cannot read the CPU's features from {cpuinfo}: {e}") from e
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    raise BundleError(f"{cpuinfo} lists no 'flags' line: cannot tell which ISA level runs here")


def choose(levels: dict[str, list[str]], flags: set[str], force: str | None = None) -> str:
    """The level to load: `force` if given (refused if the CPU lacks a flag it needs), else
    the last of `levels` (lowest first, as built) whose required flags the CPU has."""
    if force:
        if force not in levels:
            raise BundleError(f"{ENV_FORCE}={force}: this bundle has {', '.join(levels)}")
        missing = sorted(set(levels[force]) - flags)
        if missing:
            raise BundleError(f"{ENV_FORCE}={force}: this CPU lacks {' '.join(missing)}")
        return force
    usable = [lv for lv, need in levels.items() if set(need) <= flags]
    if not usable:
        need = {lv: sorted(set(n) - flags) for lv, n in levels.items()}
        raise BundleError(f"no level of this bundle runs on this CPU (missing: {need})")
    return usable[-1]


def build(mod: Any, out: Path, levels: list[str]) -> dict[str, float]:
    """Compiles the Relax module `mod` once per level into `out`; returns compile seconds."""
    import tvm

    for level in levels:
        required_flags(level)  # an unknown level fails before any compile
    out.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    entries = {}
    for level in sorted(levels, key=list(LEVELS).index):
        t = time.perf_counter()
        ex = tvm.compile(mod, target=tvm.target.Target({"kind": "llvm", "mcpu": level}))
        ex.export_library(str(out / f"{level}.so"))
        seconds[level] = time.perf_counter() - t
        entries[level] = {"library": f"{level}.so", "flags": required_flags(level)}
        print(f"  {level}: {seconds[level]:.1f} s", flush=True)
    (out / MANIFEST).write_text(json.dumps({"levels": entries}, indent=1) + "\n")
    return seconds


def levels_of(bundle: Path) -> dict[str, list[str]]:
    """The levels a bundle holds, lowest first, each with the CPU flags it needs."""
    try:
        entries = json.loads((bundle / MANIFEST).read_text())["levels"]
    except (OSError, ValueError, KeyError) as e:
        raise BundleError(f"{bundle} is not a bundle ({MANIFEST}: {e})") from e
    return {lv: list(e["flags"]) for lv, e in entries.items()}


def best_level(bundle: Path, level: str | None = None) -> str:
    """The level of `bundle` to load here: `level`, else the one TVMFORK_ISA names, else the
    highest this CPU runs (a forced one is checked against the CPU)."""
    return choose(levels_of(bundle), cpu_flags(), level or os.environ.get(ENV_FORCE))


def load(bundle: Path, device: Any = None, level: str | None = None) -> tuple[Any, str]:
    """A VirtualMachine for the best level of `bundle` this CPU runs (or `level`, or the
    one TVMFORK_ISA names), and that level's name."""
    import tvm
    from tvm import relax

    chosen = best_level(bundle, level)
    lib = tvm.runtime.load_module(str(bundle / f"{chosen}.so"))
    return relax.VirtualMachine(lib, device or tvm.cpu()), chosen


def _suite() -> Any:
    """The conformance lane's torchvision suite (`CASES`: name -> (model, inputs))."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python/tvmfork/conformance"))
    import torchvision_models

    return torchvision_models


def _torchvision_case(name: str):
    torchvision_models = _suite()
    if name not in torchvision_models.CASES:
        raise BundleError(f"no torchvision case {name!r}")
    import torch

    torch.manual_seed(0)  # the same random weights in `build` and in `run`, which compares
    model, inputs = torchvision_models.CASES[name]()
    return model.eval(), inputs


def _import(model: Any, inputs: Any) -> Any:
    import torch
    from tvm.relax.frontend.torch import from_exported_program

    with torch.no_grad():
        ep = torch.export.export(model, tuple(inputs))
    return from_exported_program(ep, keep_params_as_input=False)


def _call(vm: Any, args: list) -> Any:
    out = vm["main"](*args)
    return (out if hasattr(out, "numpy") else out[0]).numpy()


def _max_rel_err(out: Any, ref: Any) -> float:
    import numpy as np

    return float(np.abs(out - ref).max() / max(float(np.abs(ref).max()), 1e-30))


def _cmd_build(a: argparse.Namespace) -> int:
    model, inputs = _torchvision_case(a.model)
    build(_import(model, inputs), Path(a.out), a.levels.split(","))
    return 0


def _cmd_run(a: argparse.Namespace) -> int:
    import torch
    import tvm

    vm, level = load(Path(a.bundle))
    model, inputs = _torchvision_case(a.model)
    with torch.no_grad():
        ref = model(*inputs).numpy()
    err = _max_rel_err(_call(vm, [tvm.runtime.tensor(x.numpy()) for x in inputs]), ref)
    print(json.dumps({"level": level, "max_rel_err": err}))
    return 0 if err <= MAX_REL_ERR else 1


def _cmd_bench(a: argparse.Namespace) -> int:  # pylint: disable=too-many-locals
    import tempfile

    import torch
    import tvm

    torch.set_num_threads(a.threads)
    # -k as `tvmfork conformance -k`: repeatable, each a glob or a comma-separated list
    globs = [g.strip() for v in a.k or ["*"] for g in v.split(",") if g.strip()]
    names = [n for n in _suite().CASES if any(fnmatch.fnmatch(n, g) for g in globs)]
    levels = a.levels.split(",")
    print(
        f"| model | PyTorch ms | {' | '.join(f'{lv} ms' for lv in levels)} | loaded "
        f"| {' | '.join(f'{lv}/PyTorch' for lv in levels)} | compile s ({', '.join(levels)}) |"
    )
    print("|" + " --- |" * (3 + 2 * len(levels) + 1))
    logs: dict[str, list[float]] = {lv: [] for lv in levels}
    for name in names:
        model, inputs = _torchvision_case(name)
        try:
            mod = _import(model, inputs)
        except Exception as e:  # a model torch.export refuses: reported, the others go on
            print(f"| {name} | error (export): {type(e).__name__} |")
            continue
        with torch.no_grad():
            ref = model(*inputs).numpy()
        with tempfile.TemporaryDirectory() as tmp:
            secs = build(mod, Path(tmp), levels)
            vms = {lv: load(Path(tmp), level=lv)[0] for lv in levels}
            auto = best_level(Path(tmp))
            args = [tvm.runtime.tensor(x.numpy()) for x in inputs]
            for lv, vm in vms.items():
                err = _max_rel_err(_call(vm, args), ref)
                if err > MAX_REL_ERR:
                    raise BundleError(f"{name} at {lv}: max relative error {err:.2e}")
            times: dict[str, list[float]] = {k: [] for k in ["torch", *levels]}
            for _ in range(a.reps):
                for lv, vm in vms.items():
                    t = time.perf_counter()
                    vm["main"](*args)
                    times[lv].append(time.perf_counter() - t)
                with torch.no_grad():
                    t = time.perf_counter()
                    model(*inputs)
                    times["torch"].append(time.perf_counter() - t)
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        cells = " | ".join(f"{med[lv]:.1f}" for lv in levels)
        ratios = " | ".join(f"{med[lv] / med['torch']:.2f}" for lv in levels)
        comp = ", ".join(f"{secs[lv]:.1f}" for lv in levels)
        print(f"| {name} | {med['torch']:.1f} | {cells} | {auto} | {ratios} | {comp} |", flush=True)
        for lv in levels:
            logs[lv].append(math.log(med[lv] / med["torch"]))
    means = ", ".join(f"{lv} {math.exp(statistics.mean(v)):.2f}x" for lv, v in logs.items() if v)
    print(f"\ngeometric mean over PyTorch ({len(logs[levels[0]])} models): {means}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile a torchvision model for several levels")
    b.add_argument("model")
    b.add_argument("out")
    b.add_argument("--levels", default="x86-64,x86-64-v3")
    r = sub.add_parser("run", help="load a bundle's best level, run it, compare with PyTorch")
    r.add_argument("bundle")
    r.add_argument("model")
    m = sub.add_parser("bench", help="PyTorch eager vs each level, interleaved, one run")
    m.add_argument(
        "-k",
        action="append",
        metavar="GLOB[,GLOB]",
        help="only torchvision cases matching a glob; repeat -k or separate globs with commas "
        "(-k resnet18,mobilenet_v2 -k 'vit*'); default every case",
    )
    m.add_argument("--levels", default="x86-64,x86-64-v3")
    m.add_argument("--threads", type=int, default=1)
    m.add_argument("--reps", type=int, default=5)
    a = p.parse_args(argv)
    if a.cmd == "bench":
        os.environ["TVM_NUM_THREADS"] = str(a.threads)  # read when TVM's thread pool starts
    try:
        return {"build": _cmd_build, "run": _cmd_run, "bench": _cmd_bench}[a.cmd](a)
    except BundleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
