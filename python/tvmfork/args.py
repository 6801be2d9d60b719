"""The command line's grammar: every verb, its options and their help."""

from __future__ import annotations

import argparse
from typing import Any

from tvmfork import __version__, settings, verify
from tvmfork.conformance import suites
from tvmfork.conformance.casework import targets


def setting(sp: argparse.ArgumentParser, *flags: str, key: str, **kw: Any) -> None:
    """An option that sets the setting `key` (as tvmfork.local.toml names it): its dest says
    so, and settings.overrides_from takes it from there."""
    sp.add_argument(*flags, dest=settings.cli_dest(key), **kw)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tvmfork",
        description="A downstream Apache TVM fork as a patch series: check out, apply, export, "
        "check, build wheels and verify.",
    )
    p.add_argument("--version", action="version", version=f"tvmfork {__version__}")
    p.add_argument("--repo", help="the tvmfork repository (default: found from the cwd)")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="command", required=True)

    def with_checkout(sp: argparse.ArgumentParser) -> None:
        setting(
            sp,
            "--checkout",
            key="checkout_dir",
            help="the TVM checkout (default: settings checkout_dir)",
        )

    c = sub.add_parser("checkout", help="a TVM checkout at the pin")
    with_checkout(c)
    setting(c, "--source", key="source", help="URL, local git directory or plain folder of TVM")
    setting(
        c,
        "--submodule",
        key="submodules",
        action="append",
        default=[],
        metavar="PATH=SOURCE",
        help="source for one submodule (nested ones too), repeatable",
    )
    setting(
        c,
        "--mirrors",
        key="mirrors",
        metavar="DIR",
        help="a folder of mirrors (git directories or folders named after each repository, "
        "wheels): every source not given otherwise is taken from it",
    )
    g = c.add_mutually_exclusive_group()
    g.add_argument("--all-submodules", action="store_true", help="not only the required ones")
    g.add_argument(
        "--no-submodules",
        action="store_true",
        help="no submodule at all (enough to edit and export Python patches; not to build)",
    )
    c.add_argument("--full-history", action="store_true", help="fetch history, not depth 1")

    a = sub.add_parser("apply", help="apply the series to the checkout (git am)")
    with_checkout(a)
    a.add_argument(
        "--force",
        action="store_true",
        help="replace commits that differ from the series (kept in a backup ref)",
    )

    e = sub.add_parser("export", help="write the checkout's commits back to patches/")
    with_checkout(e)
    e.add_argument("--check", action="store_true", help="only report what is stale")

    ck = sub.add_parser(
        "check",
        help="validate the series: trailers, Fixes references, each patch stageable with its "
        "Depends-On patches (needs a checkout), overlay applicability",
    )
    with_checkout(ck)
    sub.add_parser("labels", help="print the pinned commit and the series digest (image labels)")

    w = sub.add_parser("wheel", help="build a fork wheel")
    setting(
        w,
        "--mode",
        key="wheel.mode",
        choices=settings.MODES,
        help="overlay: the stock PyPI wheel with the Python patches (seconds); source: build "
        "the patched checkout with CMake + Ninja (needs `tvmfork checkout`, a C++ compiler, "
        "LLVM >= 15); auto (default): source when the series has native patches and this "
        "machine can build, else overlay, saying what it left out",
    )
    setting(
        w,
        "--variant",
        key="wheel.variant",
        choices=settings.VARIANTS,
        help="source builds: cpu (default) or cuda (needs nvcc; the CUDA runtime sidecar)",
    )
    setting(
        w,
        "--python-only",
        key="wheel.python_only",
        action="store_true",
        default=None,
        help="overlay even with native patches, leaving them out",
    )
    setting(
        w,
        "--stock-wheel",
        key="wheel.stock_wheel",
        help="a local copy of the stock wheel (offline)",
    )
    setting(
        w,
        "--platform",
        key="wheel.platform",
        help="overlay wheels: the platform of the stock wheel to overlay (linux_x86_64, "
        "linux_aarch64, macosx_arm64, win_amd64: those the lock names), or all (default: "
        "this machine's)",
    )
    setting(w, "--out", key="out_dir", help="output folder (default: out/)")
    with_checkout(w)
    setting(
        w, "--jobs", key="build.jobs", help="parallel compile jobs (source mode; default: all CPUs)"
    )
    setting(w, "--cuda-arch", key="build.cuda_architectures", help="CMAKE_CUDA_ARCHITECTURES")
    setting(w, "--llvm-config", key="build.llvm_config", help="the llvm-config to build with")
    setting(
        w,
        "--no-ccache",
        key="build.ccache",
        action="store_false",
        default=None,
        help="source builds: compile without ccache even where it is installed",
    )

    i = sub.add_parser("info", help="the fork manifest of the installed TVM")
    i.add_argument("--json", action="store_true", help="print the data as JSON")
    i.add_argument(
        "--python",
        help="the interpreter or venv folder whose TVM to describe (default: the active venv, "
        "else the python3 on PATH, else tvmfork's own)",
    )

    def with_sides(sp: argparse.ArgumentParser) -> None:
        """Options of the commands that use the stock and fork venvs."""
        sp.add_argument("--wheel", help="a fork wheel to test (default: build the overlay)")
        setting(
            sp,
            "--stock-wheel",
            key="wheel.stock_wheel",
            help="a local copy of the stock wheel (offline)",
        )
        sp.add_argument(
            "--stock-ffi",
            default="apache-tvm-ffi==0.1.14.post1",
            help="tvm-ffi for the stock side (one with the wheel's C++ ABI; default %(default)s)",
        )
        sp.add_argument(
            "--against",
            metavar="SPEC",
            help="another stock release (apache-tvm==0.27.0.post1, or a wheel file built from "
            "another upstream commit) as the stock side, and the fork side its overlay of the "
            "Python patches that still apply to it, or --wheel's (both with --stock-ffi)",
        )

    def with_test_sides(sp: argparse.ArgumentParser, only: str) -> None:
        """Options of the commands that run tests on a stock and a fork venv."""
        sp.add_argument("patches", nargs="*", help=only)
        with_sides(sp)

    v = sub.add_parser("verify", help="each regression test: fails on stock, passes on fork")
    with_test_sides(v, "only these patches")
    v.add_argument(
        "--table",
        metavar="FILE",
        help="also write the verdicts as a markdown page to FILE (docs/against-0.27.md)",
    )
    v.add_argument(
        "--alone",
        action="store_true",
        help="prove each patch against the series without it: its tests fail on the stock "
        "package with its Depends-On patches and pass with it too (Python patches)",
    )
    v.add_argument(
        "--find-deps",
        action="store_true",
        help="with --alone: for each patch whose tests fail on its Depends-On and itself, "
        "find by bisection the earlier patches it needs and does not name",
    )
    v.add_argument(
        "--jobs",
        type=int,
        default=2,
        metavar="N",
        help="--find-deps: test runs at a time (default %(default)s)",
    )
    v.add_argument(
        "--timeout",
        type=float,
        default=verify.DEFAULT_TIMEOUT,
        metavar="S",
        help="seconds for one side's run of a patch's tests; past it the side reads TIMEOUT "
        f"(default {verify.DEFAULT_TIMEOUT:.0f})",
    )

    u = sub.add_parser(
        "upstream-tests", help="TVM's test files that the series touches: no new failures"
    )
    with_checkout(u)
    with_test_sides(u, "only the test files of these patches")
    u.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="PATH",
        help="more test files or folders of the checkout to run (tests/python/s_tir/dlight)",
    )

    cf = sub.add_parser(
        "conformance",
        help="suites of real models and ONNX conformance cases, stock vs fork: no regressions",
        description="Run conformance suites on stock TVM and on the fork, each case isolated "
        "in a worker process with a time limit; report each side's stage reached, errors and "
        "times, and exit 8 when a case that works on stock fails on the fork, or the fork "
        "gives a wrong result.",
    )
    cf.add_argument(
        "suites",
        nargs="*",
        metavar="SUITE",
        help=f"{suites.describe()} (default: ci, unless --onnx/--torch-module/--hf is given). "
        "`conformance merge REPORT...` joins the reports of a run's shards (--shard) instead",
    )
    cf.add_argument(
        "--onnx",
        action="append",
        default=[],
        metavar="PATH",
        help="your ONNX models: a .onnx file, or a folder of NAME.onnx or NAME/model.onnx "
        "(with ONNX's test_data_set_0/ beside it, else ONNX Runtime is the reference)",
    )
    cf.add_argument(
        "--torch-module",
        action="append",
        default=[],
        metavar="FILE",
        help="a Python file whose CASES maps names to functions returning (model, inputs)",
    )
    cf.add_argument(
        "--hf",
        action="append",
        default=[],
        metavar="DIR",
        help="a local HuggingFace model folder (config.json and weights): its model through "
        "torch.export, on random inputs of the model's kind",
    )
    cf.add_argument(
        "--with",
        dest="with_pkgs",
        action="append",
        default=[],
        metavar="PKG",
        help="a package your cases need (a pip requirement, or a requirements .txt file), "
        "installed once for both sides alike; repeat for more",
    )
    cf.add_argument(
        "-k",
        action="append",
        default=[],
        metavar="GLOB[,GLOB]",
        help="only cases matching a glob; repeat -k or separate globs with commas "
        "(-k resnet18,mobilenet_v2 -k 'vit*')",
    )
    cf.add_argument(
        "--side",
        choices=("both", "stock", "fork"),
        default="both",
        help="run one side only (no regression check then); default both",
    )
    cf.add_argument(
        "--target",
        default="llvm",
        help=f"{targets.describe()}; or any TVM target string, run here (default llvm)",
    )
    cf.add_argument(
        "--cuda-archs",
        default=",".join(targets.CUDA_ARCHS),
        metavar="SM[,SM]",
        help="--target cuda: compile for the first, assemble for each (default sm_80,sm_89,sm_90)",
    )
    cf.add_argument(
        "--rpc-tracker",
        metavar="HOST:PORT",
        help="run each case on a device this TVM RPC tracker hands out (python -m "
        "tvm.exec.rpc_tracker); the reference is computed here. Correctness only: no timings",
    )
    cf.add_argument("--rpc-key", metavar="KEY", help="the key the tracker's devices registered")
    cf.add_argument(
        "--emulated",
        type=int,
        metavar="N",
        help="with --target aarch64: start N aarch64 devices here for this run (qemu user "
        "mode, a Debian arm64 root made by debootstrap, the fork's aarch64 wheel in it) "
        "behind a tracker of its own, and stop them after; needs root",
    )
    cf.add_argument(
        "--cross-cc",
        metavar="CXX",
        help="the C++ compiler that links each case's library for the device (default for "
        "aarch64: aarch64-linux-gnu-g++)",
    )
    cf.add_argument(
        "--jobs",
        dest="side_jobs",
        type=int,
        default=1,
        help="workers at once, shared out over the sides: 2 runs stock and fork at the same "
        "time (timings then compete); with an RPC tracker, one per device",
    )
    cf.add_argument("--timeout", type=float, help="seconds per case (default 120 node, 1200 model)")
    cf.add_argument(
        "--reps", type=int, default=5, help="timing runs of each passing model (default 5)"
    )
    cf.add_argument("--no-bench", action="store_true", help="no timing runs")
    cf.add_argument(
        "--ort",
        action="store_true",
        help="also time ONNX Runtime on each PyTorch model, exported with "
        "torch.onnx.export(dynamo=True): a second anchor beside PyTorch eager",
    )
    cf.add_argument(
        "--inductor",
        action="store_true",
        help="also time torch.compile (Inductor, CPU, default mode) on each PyTorch model: a "
        "third anchor",
    )
    cf.add_argument(
        "--threads",
        type=int,
        help="threads for TVM, PyTorch and ONNX Runtime alike (default: each its own)",
    )
    cf.add_argument(
        "--samples",
        type=int,
        default=3,
        metavar="N",
        help="opinfo: the first N sample inputs of each op in each dtype (default 3)",
    )
    cf.add_argument("--report", help="report folder (default: out/conformance)")
    cf.add_argument(
        "--bundle",
        metavar="DIR",
        help="compile each case here and write it into DIR (a new folder) for a device that "
        "has only TVM's runtime: the libraries, their inputs and references, each side's "
        "TVM without its compiler, the wheels it imports and a runner (`python DIR/run.py` "
        "there; then --from-bundle)",
    )
    cf.add_argument(
        "--bundle-limit",
        type=int,
        default=64,
        metavar="MIB",
        help="--bundle: the most it may hold, in MiB; cases past it are left out (default 64)",
    )
    cf.add_argument(
        "--device-python",
        default="3.12",
        metavar="X.Y",
        help="--bundle: the device's Python version, for the wheels it carries (default 3.12)",
    )
    cf.add_argument(
        "--from-bundle",
        metavar="DIR",
        help="the report of a bundle's run on its device: the folder its run.py wrote (--out)",
    )
    cf.add_argument(
        "--shard",
        metavar="K/N",
        help="run the K-th of N deterministic shards of the cases (e.g. one per machine of a "
        "CI matrix); `tvmfork conformance merge REPORT...` joins the N reports into one",
    )
    with_sides(cf)

    ev = sub.add_parser(
        "envs",
        help="make (or reuse) the stock, fork and shared test venvs now, showing what pip "
        "installs; `make test` runs it first",
    )
    with_sides(ev)

    st = sub.add_parser("stage", help="one patch as a ready upstream pull request (no push)")
    with_checkout(st)
    st.add_argument("patch", help="the patch (file name, with or without .patch)")
    st.add_argument("--onto", help="a newer upstream revision in the checkout (default: the pin)")

    st = sub.add_parser(
        "status",
        help="one row per patch: kind, size, Depends-On, the proofs under docs/proofs/, "
        "staged, upstream status",
    )
    st.add_argument(
        "--write",
        action="store_true",
        help="write the table to docs/status.md instead of printing it",
    )

    r = sub.add_parser("roll", help="re-apply the series onto another upstream revision")
    with_checkout(r)
    r.add_argument("--to", required=True, help="the revision (tag or commit)")
    setting(r, "--source", key="source", help="where to fetch it (default: settings source)")
    r.add_argument("--dry-run", action="store_true", help="report only; change nothing")
    r.add_argument(
        "--prove",
        action="store_true",
        help="build stock REV and the rolled series from source (ccache; resumes) and test "
        "them: each patch clean, merged, absorbed, BROKEN after the roll, CONFLICT or UNPROVEN",
    )
    r.add_argument(
        "--no-upstream-tests",
        action="store_true",
        help="with --prove: run only the regression tests, not the upstream test files",
    )
    r.add_argument(
        "--stock-ffi",
        default="apache-tvm-ffi==0.1.14.post1",
        help="with --prove: tvm-ffi for both built wheels (default %(default)s)",
    )
    r.add_argument(
        "--timeout",
        type=float,
        default=verify.DEFAULT_TIMEOUT,
        metavar="S",
        help="with --prove: seconds per test run (default %(default)s)",
    )
    r.add_argument(
        "--table",
        metavar="FILE",
        help="also write each patch's result as a markdown page to FILE (docs/roll-main.md)",
    )
    return p
