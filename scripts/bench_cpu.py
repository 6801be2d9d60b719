"""Benchmark (not a test): untuned CPU builds of conv models, fork vs stock TVM vs PyTorch eager.

One run measures every model on PyTorch eager and on each TVM given (`tvm.compile(mod,
target=...)` with the default pipeline, no tuning), checks TVM's output against PyTorch's, and
prints medians and ratios, with the thread counts each used. Each TVM runs in its own
interpreter (a venv with that wheel and torch==2.13.0), so the stock wheel and the fork wheel
are measured side by side:

    python scripts/bench_cpu.py --tvm stock=STOCK_VENV/bin/python --tvm fork=FORK_VENV/bin/python
    ... --tvm-threads 2 --target host      # as many threads as PyTorch; the host's ISA

PyTorch runs in each TVM's interpreter too, its calls interleaved with TVM's in blocks of 5,
so each ratio compares two medians taken over the same minutes (this machine's speed drifts).
TVM picks its own thread count (stock: half the logical CPUs on x86, assuming SMT; the fork:
one per physical core), and target "llvm" compiles for the baseline ISA (SSE2 on x86-64)
while PyTorch dispatches to the host's widest vectors at run time: both are printed, and
both can be set (`--target host` is `tvm.target.Target.from_device("cpu")`).

Models: the DCGAN-64 generator, the same generator after ConvertLayout to NHWC, two 3x3 convs
(N, 64, 32, 32), and a grouped, dilated decoder of transposed convs; batch N = 8 (`--batch`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _paths  # noqa: F401  (the conformance worker's folder on sys.path)
from casework.timing import interleaved  # type: ignore[import-not-found]

MODELS = ("dcgan", "dcgan-nhwc", "conv3x3", "decoder")


class Generator(torch.nn.Module):
    """DCGAN generator: z (N, 100, 1, 1) -> (N, 3, 32, 32)."""

    def __init__(self, z: int = 100) -> None:
        super().__init__()
        layers: list[torch.nn.Module] = []
        for cin, cout, stride, pad in ((z, 256, 1, 0), (256, 128, 2, 1), (128, 64, 2, 1)):
            layers += [
                torch.nn.ConvTranspose2d(cin, cout, 4, stride, pad, bias=False),
                torch.nn.BatchNorm2d(cout),
                torch.nn.ReLU(),
            ]
        layers += [torch.nn.ConvTranspose2d(64, 3, 4, 2, 1, bias=False), torch.nn.Tanh()]
        self.net = torch.nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Convs(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(64, 128, 3, padding=1)
        self.b = torch.nn.Conv2d(128, 64, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


class Decoder(torch.nn.Module):
    """Grouped and dilated transposed convs: (N, 64, 8, 8) -> (N, 16, 31, 31)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.ConvTranspose2d(64, 64, 3, 2, 1, output_padding=1, groups=4)
        self.b = torch.nn.ConvTranspose2d(64, 32, 3, 2, 2, dilation=2, groups=2)
        self.c = torch.nn.ConvTranspose2d(32, 16, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


def model_and_input(name: str, batch: int = 8) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    if name.startswith("dcgan"):
        model, x = Generator(), torch.randn(batch, 100, 1, 1)
    elif name == "conv3x3":
        model, x = Convs(), torch.randn(batch, 64, 32, 32)
    elif name == "decoder":
        model, x = Decoder(), torch.randn(batch, 64, 8, 8)
    else:
        raise SystemExit(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    for m in model.modules():  # non-trivial batch-norm statistics
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    return model.eval(), x


def tvm_worker(
    names: list[str], repeat: int, target: str, threads: int, batch: int
) -> dict[str, object]:
    """Compile and time each model on the TVM of this interpreter, interleaved with PyTorch
    eager in this same process; TVM's outputs vs PyTorch's.

    TVM's thread pool pins the main thread to the cores it uses (stock TVM on this VM: one
    core), and threads created later inherit that mask. So PyTorch's thread pool is started
    first, and each PyTorch block runs with the main thread's mask as the process began."""
    torch.set_num_threads(threads)
    torch.ones(256, 256) @ torch.ones(256, 256)  # start PyTorch's threads before TVM's pool
    all_cpus = os.sched_getaffinity(0)

    import tvm
    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    if target == "host":  # the host CPU's features, where "llvm" alone is the baseline ISA
        target = tvm.target.Target.from_device("cpu")
    results: dict[str, object] = {"tvm": tvm.__version__, "target": str(target)}
    results["threads"] = tvm.runtime.num_threads()
    results["torch_threads"] = torch.get_num_threads()
    for name in names:
        model, x = model_and_input(name, batch)
        with torch.no_grad():
            expected = model(x).numpy()
            program = torch.export.export(model, (x,))
        mod = from_exported_program(program, keep_params_as_input=False)
        if name.endswith("-nhwc"):
            desired = {"relax.nn.conv2d_transpose": ["NHWC", "OHWI"]}
            mod = relax.transform.ConvertLayout(desired)(mod)
        try:
            start = time.perf_counter()
            exe = tvm.compile(mod, target=target)
            compile_s = time.perf_counter() - start
            vm = relax.VirtualMachine(exe, tvm.cpu())
            x_tvm = tvm.runtime.tensor(x.numpy())
            out = vm["main"](x_tvm)
            out = out if isinstance(out, tvm.runtime.Tensor) else out[0]
            err = float(np.max(np.abs(out.numpy() - expected)))
        except Exception as e:  # a failure is a result: report it, go on
            results[name] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
            continue

        tvm_cpus = os.sched_getaffinity(0)  # as TVM's pool left the main thread

        def run_tvm(vm=vm, x_tvm=x_tvm, cpus=tvm_cpus):
            os.sched_setaffinity(0, cpus)
            vm["main"](x_tvm)

        def run_torch(model=model, x=x):
            os.sched_setaffinity(0, all_cpus)
            with torch.no_grad():
                model(x)

        # alternating blocks of 5 calls, each after a pause and an untimed call, so that both
        # see the same machine (this 2-core VM's speed drifts by tens of percent from minute
        # to minute) and the other runtime's idle threads have stopped spinning
        ms = interleaved(
            {"tvm": run_tvm, "torch": run_torch}, repeat, block=5, pause_s=0.05, settle=True
        )
        tvm_s, torch_s = ms["tvm_ms"] / 1e3, ms["torch_ms"] / 1e3
        results[name] = {
            "seconds": tvm_s,
            "torch": torch_s,
            "compile_s": compile_s,
            "max_abs_err": err,
        }
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--tvm", action="append", default=[], metavar="LABEL=PYTHON",
        help="an interpreter whose TVM to measure (repeatable)",
    )  # fmt: skip
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--batch", type=int, default=8, help="batch size of every model (default 8)")
    ap.add_argument("--threads", type=int, default=2, help="PyTorch threads (default 2)")
    ap.add_argument("--target", default="llvm", help='"llvm" (baseline ISA) or "host"')
    ap.add_argument(
        "--tvm-threads", type=int, help="TVM_NUM_THREADS for TVM (default: TVM's own choice)"
    )
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(tvm_worker(a.models, a.repeat, a.target, a.threads, a.batch)))
        return
    if not a.tvm:
        ap.error("give at least one --tvm LABEL=PYTHON")

    rows: dict[str, dict[str, object]] = {name: {} for name in a.models}
    labels = []
    for spec in a.tvm:
        label, _, python = spec.partition("=")
        labels.append(label)
        cmd = [python, __file__, "--worker", "--repeat", str(a.repeat), "--target", a.target]
        cmd += ["--threads", str(a.threads), "--batch", str(a.batch)]
        env = dict(os.environ)
        if a.tvm_threads:
            env["TVM_NUM_THREADS"] = str(a.tvm_threads)
        r = subprocess.run([*cmd, "--models", *a.models], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            sys.exit(f"{label} ({python}) failed:\n{r.stderr[-3000:]}")
        res = json.loads(r.stdout.strip().splitlines()[-1])
        print(
            f"{label}: TVM {res['tvm']}, target {res['target']}, {res['threads']} TVM threads, "
            f"{res['torch_threads']} PyTorch threads"
        )
        for name in a.models:
            rows[name][label] = res[name]

    print(
        f"torch {torch.__version__}; batch {a.batch}; median of {a.repeat} calls each, TVM and "
        "PyTorch interleaved in blocks of 5 in the same process"
    )
    head = f"{'model':12}"
    for label in labels:
        head += f" {'torch ms':>9} {label + ' ms':>10} {label + '/torch':>12} {'err':>8}"
    print(head)
    for name, row in rows.items():
        line = f"{name:12}"
        for label in labels:
            r = row[label]
            if "error" in r:
                line += f"  {label}: {r['error']}"
                continue
            ratio = r["seconds"] / r["torch"]
            line += f" {r['torch'] * 1e3:9.2f} {r['seconds'] * 1e3:10.2f} {ratio:11.2f}x"
            line += f" {r['max_abs_err']:8.1e}"
        print(line)
    if "dcgan" in rows and "dcgan-nhwc" in rows:
        for label in labels:
            nchw, nhwc = rows["dcgan"][label], rows["dcgan-nhwc"][label]
            if "seconds" in nchw and "seconds" in nhwc:
                print(f"{label}: dcgan NHWC / NCHW = {nhwc['seconds'] / nchw['seconds']:.2f}")


if __name__ == "__main__":
    main()
