"""Benchmark (not a test): LLM generation, the fork's compiled static-cache export vs PyTorch eager.

One run builds a transformers decoder LM from a config (seeded random weights), exports it
with transformers' static cache (`TorchExportableModuleForDecoderOnlyLM`, the sequence length
dynamic), compiles it once with the fork for the host's ISA (`Target.from_device("cpu")`) and
saves the library. Then each side runs in its own process, with the same thread count:

- PyTorch eager: the same static-cache module, called in Python (prefill, then token by token);
- fork: the compiled library loaded with `tvm.runtime.load_module`, no torch imported, the
  cache fed back from call to call as `StatefulModule` does.

Each prints the prefill time of a PROMPT-token prompt, the median time per decoded token (greedy,
the token's logits read back to the host), its peak RSS and its compile time; the parent prints the
table with ratios (fork / PyTorch: below 1 is faster) and each side's prefill rate in the linear
layers against PyTorch's own 2048 x 2048 float32 matmul on this CPU, and checks that in float32 both
generated the same tokens (in a half precision a near-tie of random weights' logits may go either
way: it prints how many agree). `--size published` takes SmolLM-135M's (llama) and Qwen2.5-0.5B's
(qwen2) configs. `--dtypes float32,bfloat16` builds the model in each dtype (weights and cache, as
`from_pretrained(torch_dtype=...)` loads a checkpoint) and runs both sides in each; `--torch-dtypes`
leaves PyTorch's slow ones out (bfloat16 matmul without AVX512-BF16 is a scalar loop in PyTorch).

`--inductor` adds torch.compile (Inductor, default mode) on the same static-cache module, in
PyTorch's dtypes (compiled by the warm-up calls, not timed). `--ort` adds ONNX Runtime in
float32, on the prefill only: the model's forward without a cache (input ids to logits, the
length dynamic) exported with `torch.onnx.export(..., dynamo=True)`, as a user exports it; its
attention spans the prompt, where the static-cache module's spans the whole cache (masked), and
a decode step would need the cache in the graph, which that export does not have.

    python scripts/bench_generation.py --python FORK_VENV/bin/python --threads 1
    python scripts/bench_generation.py --python FORK_VENV/bin/python --dtypes float32,bfloat16
    python scripts/bench_generation.py --python FORK_VENV/bin/python --inductor --ort
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _paths  # noqa: F401  (the conformance worker's folder on sys.path)
from casework.bundle import restored, storable  # type: ignore[import-not-found]

# a small LM (about 25M parameters): 4 layers, 256 wide, GQA; the same config for each family
SMALL = {
    "vocab_size": 8192,
    "hidden_size": 256,
    "intermediate_size": 688,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "max_position_embeddings": 512,
    "initializer_range": 0.2,
}
# the published sizes: SmolLM-135M's Llama config and Qwen2.5-0.5B's (random weights)
PUBLISHED = {
    "llama": {
        "vocab_size": 49152,
        "hidden_size": 576,
        "intermediate_size": 1536,
        "num_hidden_layers": 30,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": True,
        "initializer_range": 0.02,
    },
    "qwen2": {
        "vocab_size": 151936,
        "hidden_size": 896,
        "intermediate_size": 4864,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": True,
        "initializer_range": 0.02,
    },
}
SIZES = {"small": {"llama": SMALL, "qwen2": SMALL}, "published": PUBLISHED}
CONFIGS = dict(SIZES["small"])
DTYPES = ("float32", "bfloat16", "float16")
# the processes a run may start: PyTorch eager, the fork, torch.compile, ONNX Runtime
SIDES = ("torch", "fork", "inductor", "ort")
SHIM = Path(__file__).resolve().parents[1] / "python/tvmfork/conformance/torchvision_shim.py"


def _transformers():
    import importlib.util

    spec = importlib.util.spec_from_file_location("torchvision_shim", SHIM)
    shim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shim)
    shim.load()
    import transformers

    return transformers


def _lm(name: str, dtype: str):
    """The transformers model: the same random weights in every dtype, made in float32 and
    then cast (a cache, made later, takes the model's dtype)."""
    import torch

    transformers = _transformers()
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(name, **CONFIGS[name])
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    return model.to(getattr(torch, dtype))


def _model(name: str, cache: int, dtype: str):
    model = _lm(name, dtype)
    model.generation_config.cache_implementation = "static"
    model.generation_config.cache_config = {"batch_size": 1, "max_cache_len": cache}
    from transformers.integrations.executorch import TorchExportableModuleForDecoderOnlyLM

    return TorchExportableModuleForDecoderOnlyLM(model)


def _prompt(length: int, vocab: int):
    import numpy as np

    return np.random.default_rng(0).integers(0, vocab, (1, length), dtype="int64")


def prepare(args: argparse.Namespace, work: Path) -> None:
    """Export, compile for the host and save the library and the cache's first values."""
    import numpy as np
    import torch
    import tvm
    from tvm.relax.frontend.torch import from_exported_program

    module = _model(args.model, args.cache, args.dtype)
    prompt = torch.from_numpy(_prompt(args.prompt, CONFIGS[args.model]["vocab_size"]))
    seq = torch.export.Dim("seq", max=args.cache)
    start = time.perf_counter()
    exported = module.export(
        input_ids=prompt,
        cache_position=torch.arange(args.prompt),
        dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}},
    )
    mod = from_exported_program(exported)
    # the cache's first values, bfloat16 as its bits with the dtype's name (as a bundle keeps them)
    state, dtypes = {}, {}
    for i, v in enumerate(mod["main"].attrs["mutated_buffer_values"]):
        state[f"{i:03d}"], dtypes[f"{i:03d}"] = storable(v.numpy())
    target = tvm.target.Target.from_device("cpu")
    tvm.compile(mod, target=target).export_library(str(work / "lm.so"))
    np.savez(work / "state.npz", **state)
    (work / "state.json").write_text(json.dumps(dtypes))
    seconds = time.perf_counter() - start
    (work / "compile.json").write_text(json.dumps({"compile_s": seconds}))
    print(f"export + import + compile ({target}): {seconds:.1f} s")


def _side_torch(args: argparse.Namespace, inductor: bool = False) -> dict:
    """PyTorch eager on the static-cache module, or (`inductor`) torch.compile on it (default
    mode), compiled by two untimed calls (the prompt's shape, then one token's)."""
    import torch

    torch.set_num_threads(args.threads)
    module = _model(args.model, args.cache, args.dtype)
    # the static-cache module itself: the export wrapper's forward drops cache_position
    forward = torch.compile(module.model) if inductor else module.model
    prompt = torch.from_numpy(_prompt(args.prompt, CONFIGS[args.model]["vocab_size"]))

    def step(ids, positions):
        with torch.no_grad():
            logits = forward(input_ids=ids, cache_position=positions)
            return int(logits[0, -1].argmax())

    result: dict = {}
    if inductor:
        start = time.perf_counter()
        step(prompt, torch.arange(args.prompt))
        step(torch.tensor([[0]]), torch.tensor([args.prompt]))
        result["compile_s"] = time.perf_counter() - start
    result.update(
        _generate(
            args,
            lambda: step(prompt, torch.arange(args.prompt)),
            lambda token, pos: step(torch.tensor([[token]]), torch.tensor([pos])),
        )
    )
    if not inductor:
        linears = [m for m in module.model.modules() if isinstance(m, torch.nn.Linear)]
        result["linear_macs_per_token"] = sum(m.in_features * m.out_features for m in linears)
        result["matmul_gflops"] = _matmul_rate(torch)
    return result


def _side_ort(args: argparse.Namespace, work: Path) -> dict:
    """ONNX Runtime on the model's forward without a cache (input ids to logits, the sequence
    length dynamic), exported as a user would (torch.onnx.export, dynamo): the prefill only.
    Its decode would need the cache as inputs and outputs of the graph, which this export does
    not have, so it is not timed."""
    import numpy as np
    import onnxruntime as ort
    import torch

    torch.set_num_threads(args.threads)
    model = _lm(args.model, args.dtype)

    class Forward(torch.nn.Module):
        def __init__(self, model) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids):
            return self.model(input_ids=input_ids, use_cache=False).logits

    prompt = _prompt(args.prompt, CONFIGS[args.model]["vocab_size"])
    seq = torch.export.Dim("seq", max=args.cache)
    path = work / "lm.onnx"
    start = time.perf_counter()
    with torch.no_grad():
        program = torch.onnx.export(
            Forward(model).eval(),
            (torch.from_numpy(prompt),),
            dynamo=True,
            dynamic_shapes={"input_ids": {1: seq}},
        )
    program.save(str(path))
    del program, model  # the session holds its own copy of the weights
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    export_s = time.perf_counter() - start

    def prefill():
        logits = session.run(None, {name: prompt})[0]
        return int(np.argmax(logits[0, -1].astype("float32")))

    return {**_generate(args, prefill, None), "compile_s": export_s}


def _matmul_rate(torch, n: int = 2048) -> float:
    """PyTorch's own float32 n x n matmul on this CPU, GFLOP/s (median of 5): the rate a
    compute-bound prefill can reach here."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    times = []
    for _ in range(5):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * n**3 / statistics.median(times) / 1e9


def _side_fork(args: argparse.Namespace, work: Path) -> dict:
    import numpy as np
    import tvm
    from tvm import relax

    vm = relax.VirtualMachine(tvm.runtime.load_module(str(work / "lm.so")), tvm.cpu())
    saved = np.load(work / "state.npz")
    dtypes = json.loads((work / "state.json").read_text())
    state = [tvm.runtime.tensor(restored(saved[k], dtypes[k])) for k in sorted(saved.files)]
    prompt = _prompt(args.prompt, CONFIGS[args.model]["vocab_size"])

    def step(ids, positions):
        nonlocal state
        out = vm["main"](tvm.runtime.tensor(ids), tvm.runtime.tensor(positions), *state)
        state = list(out[1:])
        return int(np.argmax(out[0].numpy()[0, -1].astype("float32")))

    result = _generate(
        args,
        lambda: step(prompt, np.arange(args.prompt, dtype="int64")),
        lambda token, pos: step(np.array([[token]], "int64"), np.array([pos], "int64")),
    )
    return {**result, **json.loads((work / "compile.json").read_text())}


def _generate(args: argparse.Namespace, prefill, decode) -> dict:
    """Prefill (median of --prefills calls after a warm-up call, compile-free on both sides) and
    decode times; a side without `decode` (None) times the prefill only."""
    prefill()  # warm-up: first-call allocations, lazy initialization
    if decode is not None:
        decode(0, args.prompt)
    times = []
    for _ in range(args.prefills):  # each rewrites the same cache positions
        start = time.perf_counter()
        tokens = [prefill()]
        times.append((time.perf_counter() - start) * 1e3)
    prefill_ms = statistics.median(times)
    per_token = []
    positions = range(args.prompt, args.prompt + args.tokens - 1) if decode else range(0)
    for position in positions:
        start = time.perf_counter()
        tokens.append(decode(tokens[-1], position))
        per_token.append((time.perf_counter() - start) * 1e3)
    return {
        "prefill_ms": prefill_ms,
        "token_ms": statistics.median(per_token) if per_token else None,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "tokens": tokens,
    }


def _cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(CONFIGS), default="llama")
    parser.add_argument("--prompt", type=int, default=128, help="prompt tokens (prefill)")
    parser.add_argument("--tokens", type=int, default=64, help="tokens to generate")
    parser.add_argument("--cache", type=int, default=256, help="the static cache's length")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--prefills", type=int, default=3, help="prefills timed (the median)")
    parser.add_argument(
        "--size",
        choices=sorted(SIZES),
        default="small",
        help="small: 4 layers, 256 wide; published: SmolLM-135M (llama), Qwen2.5-0.5B (qwen2)",
    )
    parser.add_argument(
        "--dtypes",
        default="float32",
        help="the model's dtypes, comma-separated (float32, bfloat16, float16): each is built "
        "and run on both sides",
    )
    parser.add_argument(
        "--torch-dtypes",
        help="the dtypes PyTorch eager runs in (default: --dtypes): leave out the ones PyTorch "
        "has no fast kernel for on this CPU",
    )
    parser.add_argument(
        "--inductor",
        action="store_true",
        help="also torch.compile (Inductor) on the same module, in PyTorch's dtypes",
    )
    parser.add_argument(
        "--ort",
        action="store_true",
        help="also ONNX Runtime's prefill (the forward without a cache, exported with "
        "torch.onnx.export), in float32",
    )
    parser.add_argument("--python", default=sys.executable, help="a venv with the fork and torch")
    parser.add_argument("--side", choices=["prepare", *SIDES], help=argparse.SUPPRESS)
    parser.add_argument("--dtype", default="float32", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    CONFIGS.update(SIZES[args.size])
    if args.prompt + args.tokens - 1 > args.cache:
        parser.error(f"--prompt + --tokens - 1 must fit in --cache ({args.cache})")
    dtypes = args.dtypes.split(",")
    torch_dtypes = args.torch_dtypes.split(",") if args.torch_dtypes else dtypes
    unknown = sorted(set(dtypes + torch_dtypes) - set(DTYPES))
    if unknown:
        parser.error(f"unknown dtype(s) {', '.join(unknown)}; known: {', '.join(DTYPES)}")

    if args.side == "prepare":
        prepare(args, Path(args.work))
        return 0
    if args.side:
        work = Path(args.work)
        result = {
            "torch": lambda: _side_torch(args),
            "fork": lambda: _side_fork(args, work),
            "inductor": lambda: _side_torch(args, inductor=True),
            "ort": lambda: _side_ort(args, work),
        }[args.side]()
        print(json.dumps(result))
        return 0

    threads = str(args.threads)
    env = {**os.environ, "TVM_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
    results: dict[tuple[str, str], dict] = {}
    with tempfile.TemporaryDirectory(prefix="tvmfork-bench-gen-") as top:
        for dtype in dtypes + [d for d in torch_dtypes if d not in dtypes]:
            work = Path(top) / dtype
            work.mkdir()
            command = [args.python, __file__, "--model", args.model, "--prompt", str(args.prompt)]
            command += ["--size", args.size, "--prefills", str(args.prefills)]
            command += ["--tokens", str(args.tokens), "--cache", str(args.cache)]
            command += ["--threads", threads, "--work", str(work), "--dtype", dtype]
            sides = [("torch", "PyTorch")] if dtype in torch_dtypes else []
            if dtype in torch_dtypes and args.inductor:
                sides.append(("inductor", "Inductor"))
            if dtype == "float32" and args.ort:
                sides.append(("ort", "ORT"))
            if dtype in dtypes:
                subprocess.run([*command, "--side", "prepare"], check=True, env=env)
                sides.append(("fork", "fork"))
            for side, label in sides:
                print(f"running {label} {dtype} ...", file=sys.stderr, flush=True)
                out = subprocess.run(
                    [*command, "--side", side],
                    check=True,
                    env=env,
                    stdout=subprocess.PIPE,
                    text=True,
                ).stdout
                results[(label, dtype)] = json.loads(out.strip().splitlines()[-1])
    return _report(args, results)


def _report(args: argparse.Namespace, results: dict[tuple[str, str], dict]) -> int:
    """The table: a column per side and dtype, then the ratios and the prefill rates."""
    print(f"CPU: {_cpu_model()} ({os.cpu_count()} logical CPUs); {args.threads} thread(s) each")
    print(
        f"model: {args.model} ({args.size}) {CONFIGS[args.model]['num_hidden_layers']} layers, "
        f"{CONFIGS[args.model]['hidden_size']} wide, "
        f"{args.prompt}-token prompt, {args.tokens} tokens, cache {args.cache}"
    )
    columns = list(results)
    print(f"{'':22}" + "".join(f"{label + ' ' + dtype:>20}" for label, dtype in columns))
    for key, label in (
        ("prefill_ms", "prefill ms (median)"),
        ("token_ms", "ms per token (median)"),
        ("peak_rss_mib", "peak RSS MiB"),
        ("compile_s", "compile s"),
    ):
        cells = [results[c].get(key) for c in columns]
        print(
            f"{label:22}" + "".join("n/a".rjust(20) if v is None else f"{v:20.2f}" for v in cells)
        )
    # the fork against each other side in the same dtype and in float32, then against itself
    pairs = [
        (("fork", d), (other, t))
        for other in ("PyTorch", "Inductor", "ORT")
        for d in DTYPES
        for t in dict.fromkeys((d, "float32"))
        if ("fork", d) in results and (other, t) in results
    ]
    pairs += [
        (("fork", d), ("fork", "float32"))
        for d in DTYPES[1:]
        if ("fork", d) in results and ("fork", "float32") in results
    ]
    for (a, da), (b, db) in pairs:
        prefill = results[(a, da)]["prefill_ms"] / results[(b, db)]["prefill_ms"]
        line = f"{a} {da} / {b} {db}: prefill {prefill:.2f}x"
        if results[(b, db)]["token_ms"] is not None:
            token = results[(a, da)]["token_ms"] / results[(b, db)]["token_ms"]
            line += f", decode {token:.2f}x"
        print(line)
    torch_side = next(r for (label, _), r in results.items() if label == "PyTorch")
    flops = 2 * torch_side["linear_macs_per_token"] * args.prompt
    peak = torch_side["matmul_gflops"]
    rates = ", ".join(
        f"{label} {dtype} {flops / r['prefill_ms'] / 1e6:.1f}"
        for (label, dtype), r in results.items()
    )
    print(
        f"prefill GFLOP/s in the linear layers: {rates}; PyTorch's 2048 x 2048 float32 matmul "
        f"here: {peak:.1f}"
    )
    for (label, dtype), r in results.items():
        if label == "fork":
            print(f"  fork {dtype}: {flops / r['prefill_ms'] / 1e6 / peak:.0%} of that matmul rate")
    ok = True
    for dtype in DTYPES:
        for other in ("PyTorch", "Inductor", "ORT"):
            if ("fork", dtype) not in results or (other, dtype) not in results:
                continue
            theirs = results[(other, dtype)]["tokens"]  # ORT's: the prompt's next token only
            fork = results[("fork", dtype)]["tokens"][: len(theirs)]
            agree = sum(f == t for f, t in zip(fork, theirs, strict=True))
            print(f"same tokens in {dtype}, fork and {other}: {agree} of {len(fork)}")
            ok = ok and (agree == len(fork) or dtype != "float32")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
