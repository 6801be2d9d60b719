"""Benchmark (not a test): a GAN generator on TVM in NCHW, on TVM after ConvertLayout to NHWC,
and in PyTorch eager, on the same input, in one run. Prints times and ratios.

    python scripts/bench_conv_transpose.py            # with a fork wheel installed
    python scripts/bench_conv_transpose.py --kernel-layout HWOI --repeat 50

Untuned TVM on CPU is slow next to PyTorch (see the performance issue); the figure this script
exists for is NHWC / NCHW, the cost of the layout patch's transposes.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program


class Generator(torch.nn.Module):
    def __init__(self, z: int, width: int) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.ConvTranspose2d(z, width * 2, 4, 1, 0),
            torch.nn.BatchNorm2d(width * 2),
            torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(width * 2, width, 4, 2, 1),
            torch.nn.BatchNorm2d(width),
            torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(width, 3, 4, 2, 1),
            torch.nn.Tanh(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def timed(fn, repeat: int) -> float:
    fn()  # warm up
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kernel-layout", default="OHWI")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--width", type=int, default=32)
    args = ap.parse_args()

    torch.manual_seed(0)
    model = Generator(64, args.width).eval()
    x = torch.randn(args.batch, 64, 1, 1)
    mod = from_exported_program(torch.export.export(model, (x,)), keep_params_as_input=False)
    variants = {
        "tvm NCHW": mod,
        f"tvm NHWC/{args.kernel_layout}": relax.transform.ConvertLayout(
            {"relax.nn.conv2d_transpose": ["NHWC", args.kernel_layout]}
        )(mod),
    }
    with torch.no_grad():
        expected = model(x).numpy()
        results = {"torch eager": timed(lambda: model(x), args.repeat)}
    dev = tvm.cpu()
    x_tvm = tvm.runtime.tensor(x.numpy())
    for name, m in variants.items():
        vm = relax.VirtualMachine(tvm.compile(m, target="llvm"), dev)
        out = vm["main"](x_tvm)
        out = out if isinstance(out, tvm.runtime.Tensor) else out[0]
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-4)
        results[name] = timed(lambda vm=vm: vm["main"](x_tvm), args.repeat)

    print(
        f"generator: batch {args.batch}, width {args.width}, output {tuple(expected.shape)}; "
        f"median of {args.repeat} runs; TVM {tvm.__version__}, torch {torch.__version__}"
    )
    base = results["tvm NCHW"]
    for name, t in results.items():
        print(f"  {name:16} {t * 1e3:9.2f} ms   {t / base:6.2f}x tvm NCHW")
    nhwc = results[f"tvm NHWC/{args.kernel_layout}"]
    print(
        f"NHWC / NCHW = {nhwc / base:.2f} (goal <= 1.25); "
        f"tvm NCHW / torch = {base / results['torch eager']:.1f}"
    )


if __name__ == "__main__":
    main()
