"""Benchmark (not a test): one Relax pass of the fork's pipeline, off and on, on an LLM.

Builds `scripts/bench_generation.py`'s model (a transformers decoder LM from a config, seeded
random weights, exported with the static cache and the sequence length dynamic), compiles it
twice in one process for the host's ISA, once with the pass `--pass` of `tvm.relax.transform`
replaced by a no-op and once as it is, then runs the two alternately: a prefill of PROMPT tokens
and DECODE greedy steps after it, ROUNDS times. Prints each side's medians, their ratio, and
the largest difference of the prefill's logits between the two (0.0: bit-identical). Run it
with the fork venv's python, on an otherwise idle machine:

    FORK_VENV/bin/python scripts/bench_pass_ab.py --pass FuseMovesIntoMatmul --model llama
"""

from __future__ import annotations

import argparse
import statistics
import time

import bench_generation as bg


def _compile(mod, target, passes, name: str, enabled: bool):
    import tvm
    from tvm import relax

    original = getattr(passes, name)
    if not enabled:
        setattr(passes, name, lambda: tvm.transform.Sequential([]))
    try:
        return relax.VirtualMachine(tvm.compile(mod, target=target), tvm.cpu())
    finally:
        setattr(passes, name, original)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pass", dest="name", required=True, help="a tvm.relax.transform pass")
    parser.add_argument("--model", choices=sorted(bg.SIZES["published"]), default="llama")
    parser.add_argument("--size", choices=sorted(bg.SIZES), default="published")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--cache", type=int, default=528)
    parser.add_argument("--decode", type=int, default=8, help="decode steps timed per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import numpy as np
    import torch
    import tvm
    import tvm.relax.transform as passes
    from tvm.relax.frontend.torch import from_exported_program

    if not hasattr(passes, args.name):
        parser.error(f"tvm.relax.transform has no pass {args.name}")
    torch.set_num_threads(1)
    bg.CONFIGS.update(bg.SIZES[args.size])
    module = bg._model(args.model, args.cache, args.dtype)
    prompt = torch.from_numpy(bg._prompt(args.prompt, bg.CONFIGS[args.model]["vocab_size"]))
    seq = torch.export.Dim("seq", max=args.cache)
    exported = module.export(
        input_ids=prompt,
        cache_position=torch.arange(args.prompt),
        dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}},
    )
    mod = from_exported_program(exported)
    target = tvm.target.Target.from_device("cpu")
    print(f"CPU: {bg._cpu_model()}; 1 thread; {args.model} ({args.size}), {args.dtype}")
    vms = {}
    for side, enabled in (("without", False), ("with", True)):
        start = time.perf_counter()
        vms[side] = _compile(mod, target, passes, args.name, enabled)
        print(f"{side} {args.name}: compiled in {time.perf_counter() - start:.1f} s", flush=True)

    def tensor(values) -> object:
        return tvm.runtime.tensor(np.asarray(values, dtype="int64"))

    prefill: dict[str, list[float]] = {side: [] for side in vms}
    decode: dict[str, list[float]] = {side: [] for side in vms}
    logits: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for side, vm in vms.items():
            state = [
                tvm.runtime.tensor(v.numpy()) for v in mod["main"].attrs["mutated_buffer_values"]
            ]
            start = time.perf_counter()
            out = vm["main"](tensor(prompt.numpy()), tensor(np.arange(args.prompt)), *state)
            prefill[side].append(time.perf_counter() - start)
            logits[side] = out[0].numpy().astype("float32")
            state, steps = list(out[1:]), []
            token = int(logits[side][0, -1].argmax())
            for i in range(args.decode):
                start = time.perf_counter()
                out = vm["main"](tensor([[token]]), tensor([args.prompt + i]), *state)
                steps.append(time.perf_counter() - start)
                state = list(out[1:])
                token = int(out[0].numpy()[0, -1].argmax())
            decode[side].append(statistics.median(steps))
    for side in vms:
        print(
            f"{side:8s} prefill {statistics.median(prefill[side]) * 1e3:9.1f} ms "
            f"(rounds {', '.join(f'{t * 1e3:.0f}' for t in prefill[side])}), "
            f"decode {statistics.median(decode[side]) * 1e3:7.2f} ms a token "
            f"(rounds {', '.join(f'{t * 1e3:.1f}' for t in decode[side])})"
        )
    ratio = {
        kind: statistics.median(times["with"]) / statistics.median(times["without"])
        for kind, times in (("prefill", prefill), ("decode", decode))
    }
    print(f"with / without: prefill {ratio['prefill']:.2f}x, decode {ratio['decode']:.2f}x")
    difference = float(np.abs(logits["with"] - logits["without"]).max())
    print(f"largest prefill logit difference: {difference}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
