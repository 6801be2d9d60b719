"""Conformance suites as data: which cases, where their models come from, their limits.

- `torchvision`: `torchvision_models.py` (a torch-module suite; a user's own module of
  `CASES` works the same way, `--torch-module`).
- `transformers`: `transformers_models.py`, HuggingFace architectures built from small configs
  (random weights), through torch.export like the torchvision models.
- `transformers-registry`: `transformers_registry.py`, every model type of transformers' Auto
  registries (the venv's transformers) from its default config made small generically, called
  the ways users call it (with and without the cache, a padded batch), float32 and bfloat16.
- `transformers-bench`: `transformers_bench.py`, HuggingFace models at the published base
  sizes (BERT-base, ViT-B/16, ...) on the input sizes users run, for timing
  (`make bench-models`).
- `transformers-onnx`: the same models exported as a user would export them to ONNX
  (`torch.onnx.export(..., dynamo=True)`) and imported with `from_onnx`, against ONNX Runtime.
- `transformers-registry-onnx`: the registry's float32 calls through ONNX the same way (ONNX
  Runtime, the reference, has no bfloat16 kernel for most ops).
- `onnx-node`: ONNX's node conformance cases, generated into the cache from the generators
  the onnx wheel ships (`worker.py gen-onnx-node`); compared with their expected outputs.
- `opinfo`: PyTorch's own op tests (`torch.testing._internal.common_methods_invocations.op_db`):
  each op's first samples (`--samples N`, seeded) in each dtype it supports among float32,
  float64, int64, bool, bfloat16 and float16, generated into the cache once per torch version
  (`worker.py gen-opinfo`), each wrapped in a module through torch.export; compared with
  eager at the dtype's precision (`casework.opinfo`).
- `ci`: the subset `make test` runs: the node cases of the ops the series changes or
  schedules, a few small models (one of them the model a schedule rule once broke), the
  transformers cases the series fixed, and the op tests of the ops its torch-route patches fix.
- `device`: the subset for a device reached through RPC (under emulation a model takes a
  minute): ci's node cases, 12 torchvision models and 16 transformers cases.
- a user's HuggingFace model folder (`--hf`: config.json and weights), loaded with
  `from_pretrained` by `transformers_models.from_pretrained`.
- a user's folder of ONNX files (`--onnx`): each `NAME.onnx`, or `NAME/model.onnx` with ONNX's
  `test_data_set_0/` beside it; without data, ONNX Runtime on seeded random inputs is the
  reference.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tvmfork import proc, ui
from tvmfork.conformance.casework import opinfo as opinfo_module
from tvmfork.conformance.casework.catalog import TORCH_MODULES, pick
from tvmfork.conformance.casework.spec import Spec
from tvmfork.conformance.runner import WORKER, CaseSpec
from tvmfork.errors import ProcessError, UsageError

TORCHVISION = TORCH_MODULES["torchvision"]
TRANSFORMERS = TORCH_MODULES["transformers"]
TRANSFORMERS_BENCH = TORCH_MODULES["transformers-bench"]
TRANSFORMERS_REGISTRY = TORCH_MODULES["transformers-registry"]
# The node cases `ci` runs: ops the series' patches import, fold, lower or schedule (conv and
# conv transpose, contractions, pooling, normalization, the elementwise ops the CPU rule keeps
# scalar, casts it must not vectorize, the shape ops the ONNX folding patch evaluates).
CI_NODE = [
    "test_conv_*",
    "test_convtranspose*",
    "test_gemm_*",
    "test_matmul_*",
    "test_averagepool_2d_*",
    "test_maxpool_2d_*",
    "test_globalaveragepool*",
    "test_batchnorm_*",
    "test_instancenorm_*",
    "test_layer_normalization_*",
    "test_dropout*",
    "test_training_dropout*",
    "test_gather_elements*",
    "test_isinf*",
    "test_softmax_*",
    "test_sinh*",
    "test_cosh*",
    "test_tanh*",
    "test_erf",
    "test_gelu_*",
    "test_cast_*",
    "test_pad",
    "test_constant_pad*",
    "test_expand_*",
    "test_shape*",
    "test_constantofshape_*",
    "test_reshape_*",
    "test_where_*",
    "test_and*",
    "test_or*",
    "test_not_*",
    "test_mod_*",
    "test_bitshift_*",
    "test_spacetodepth*",
    "test_nonmaxsuppression_*",
    "test_mish*",
    "test_softplus*",
    "test_castlike_*",
    "test_roialign_*",
    "test_rms_normalization_*",
    "test_pow*",
    "test_optional_*",
]
CI_MODELS = ["squeezenet1_1", "mobilenet_v3_small", "swin_t"]
# transformers cases the series fixed: boolean masks (llama), negative indices (falcon, on both
# routes), MoE routing (mixtral), a dynamic sequence length (bert-dynamic), generation through
# the static-cache export (llama-generate, gpt2-generate), integer true division (deberta-v3),
# a decoder LM called without a cache (llama-nocache: transformers' scan of a bool mask), and
# so at a dynamic length (slices bounded by Python arithmetic on it)
CI_TRANSFORMERS = [
    "llama",
    "falcon",
    "mixtral",
    "bert-dynamic",
    "deberta-v3",
    "llama-generate",
    "gpt2-generate",
    "llama-nocache",
    "llama-nocache-dynamic",
]
CI_TRANSFORMERS_ONNX = ["falcon"]
# transformers' registry, called as users call it: bfloat16 models with layer norms and a
# cubed GELU (which the series builds), a padded batch, and an MoE whose router the suite
# draws at random (afmoe: a zero gate ties every expert), and rows selected by a bool mask
# (X-MOD's language adapters)
CI_REGISTRY = [
    "bert.mlm-padded.bfloat16",
    "gpt2.lm-default.bfloat16",
    "llama.lm-padded.bfloat16",
    "afmoe.lm-nocache.float32",
    "llama4_text.lm-padded.bfloat16",
    "xmod.mlm-padded.float32",
    "jetmoe.lm-nocache.float32",
    "xglm.lm-default.bfloat16",
    "gemma2.lm-nocache.float16",
]
# PyTorch's op tests of the ops the series' torch-route patches fix (every dtype, the first
# sample of each), one random op and one torch.export refuses (a Python bool result), which
# are listed as not run with the reason
CI_OPINFO = [
    "nn.functional.selu.*",
    "clamp*",
    "sort.*",
    "argsort.*",
    "msort.*",
    "topk.*",
    "isreal.*",
    "isposinf.*",
    "cumsum.*",
    "sum.*",
    "prod.*",
    "amax.*",
    "amin.*",
    "min.reduction_with_dim.*",
    "mm.*",
    "bmm.*",
    "baddbmm.*",
    "addmm.*",
    "nn.functional.avg_pool2d.*",
    "nn.functional.max_pool2d.*",
    "native_layer_norm.*",
    "native_group_norm.*",
    "select.*",
    "linalg.vector_norm.*",
    "full_like.*",
    "ones_like.*",
    "bernoulli.*",
    "nn.functional.grid_sample.*",
    "equal.*",
    "add.*",
    "mul.*",
    "scatter_reduce.*",
    "scatter_add.*",
    "fft.irfft.*",
    "fft.hfft.*",
    "argmax.*",
    "logsumexp.*",
    "heaviside.*",
    "fmax.*",
    "copysign.*",
    "diagonal.*",
    "kthvalue.*",
    "addmv.*",
    "nonzero.*",
    "searchsorted.*",
    "tensor_split.*",
    "tanh.*",
    "item.*",
    "erfinv.*",
    "_upsample_bilinear2d_aa.*",
]
# `device`: CNNs of every family (plain, depthwise, grouped, squeeze-excite, attention), and
# transformers of each kind: encoders, decoders (static, dynamic length, generation), MoE,
# vision, speech
DEVICE_MODELS = [
    "alexnet",
    "efficientnet_b0",
    "googlenet",
    "mnasnet0_5",
    "mobilenet_v2",
    "mobilenet_v3_small",
    "regnet_x_400mf",
    "resnet18",
    "shufflenet_v2_x0_5",
    "squeezenet1_1",
    "swin_t",
    "vit_b_32",
]
DEVICE_TRANSFORMERS = [
    "bert",
    "bert-dynamic",
    "distilbert",
    "t5-encoder",
    "gpt2",
    "gpt2-generate",
    "llama",
    "llama-dynamic",
    "llama-generate",
    "qwen2",
    "falcon",
    "mixtral",
    "vit",
    "convnext",
    "segformer",
    "wav2vec2",
]


@dataclass(frozen=True)
class Limits:
    """Per-case time limits (seconds), the timing runs of passing model cases, and how many
    samples of each op and dtype the opinfo suite takes."""

    node_timeout: float = 120.0
    model_timeout: float = 1200.0
    reps: int = 5
    budget_s: float = 30.0
    ort: bool = False  # also time ONNX Runtime on each torch model (exported to ONNX)
    inductor: bool = False  # also time torch.compile (Inductor) on each torch model
    samples: int = 3

    def torch_timing(self, route: str = "export") -> dict[str, Any]:
        """A torch case's timing fields of `Spec`: the anchors beside PyTorch eager are timed
        only where the case is (reps) and PyTorch is its reference (route "export")."""
        anchors = self.reps > 0 and route == "export"
        return {
            "reps": self.reps,
            "budget_s": self.budget_s,
            "ort": self.ort and anchors,
            "inductor": self.inductor and anchors,
        }


def check_names(names: list[str]) -> None:
    """Every name is a suite: a usage error before anything is built."""
    for name in names:
        if name not in SUITES:
            raise UsageError(f"unknown suite {name!r}; the suites: {', '.join(SUITES)}")


def describe() -> str:
    """The registry as `--help` gives it."""
    return "; ".join(f"{name}: {suite.help}" for name, suite in SUITES.items())


def _worker_json(python: Path, *args: str | Path) -> dict[str, Any]:
    out = proc.run([python, WORKER, *args]).stdout
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            result: dict[str, Any] = json.loads(line)
            return result
    raise ProcessError(f"{WORKER.name} {' '.join(map(str, args))} printed no result:\n{out}")


def torch_module(
    suite: str,
    module: Path,
    python: Path,
    limits: Limits,
    *patterns: list[str],
    route: str = "export",
    extra: Path | None = None,
) -> list[CaseSpec]:
    """The cases of a torch-module suite. `route`: "export" (torch.export and
    from_exported_program, PyTorch the reference) or "onnx" (torch.onnx.export with dynamo and
    from_onnx, ONNX Runtime the reference; the `-dynamic` and `-generate` cases are
    torch.export's only)."""
    if not module.is_file():
        raise UsageError(f"--torch-module {module}: no such file")
    path = ("--path", extra) if extra is not None else ()
    listed = _worker_json(python, "list", module, *path)
    if "error" in listed:
        raise UsageError(
            f"--torch-module {module}: importing it failed: {listed['error']} (a package it "
            "needs? give it with --with PKG)"
        )
    names = listed["cases"]
    if route == "onnx":
        names = [n for n in names if not n.endswith(("-dynamic", "-generate"))]
    return [
        CaseSpec(
            suite,
            name,
            Spec(
                kind="torch",
                route=route,
                module=str(module),
                name=name,
                rel_max=1e-3,
                **limits.torch_timing(route),
            ),
            limits.model_timeout,
        )
        for name in pick(names, *patterns)
    ]


def onnx_node(cache: Path, python: Path, limits: Limits, *patterns: list[str]) -> list[CaseSpec]:
    """ONNX's node cases, generated once per onnx version into the cache."""
    code = "import onnx, json; print(json.dumps({'v': onnx.__version__}))"
    v = json.loads(proc.run([python, "-c", code]).stdout.strip().splitlines()[-1])["v"]
    gen = cache / f"onnx-node-{v}"
    index = gen / "cases.json"
    if not index.is_file():
        with ui.step(f"generate ONNX {v} node conformance cases into {gen}"):
            proc.run([python, WORKER, "gen-onnx-node", gen])
    entries = json.loads(index.read_text())
    chosen = set(pick([e["name"] for e in entries], *patterns))
    return [
        CaseSpec(
            "onnx-node",
            e["name"],
            Spec(
                kind="onnx",
                model=e.get("model", ""),
                data=e.get("data", ""),
                rtol=e["rtol"],
                atol=e["atol"],
            ),
            limits.node_timeout,
            e.get("skip", ""),
        )
        for e in entries
        if e["name"] in chosen
    ]


def opinfo(cache: Path, python: Path, limits: Limits, *patterns: list[str]) -> list[CaseSpec]:
    """PyTorch's op_db samples, generated once per torch version and sample count into the
    cache."""
    code = "import torch, json; print(json.dumps({'v': torch.__version__}))"
    v = json.loads(proc.run([python, "-c", code]).stdout.strip().splitlines()[-1])["v"]
    # keyed by what writes the samples too: a change to the generator writes them anew
    made_by = hashlib.sha256(Path(opinfo_module.__file__).read_bytes()).hexdigest()[:8]
    gen = cache / f"opinfo-{v}-{limits.samples}-{made_by}"
    index = gen / "cases.json"
    if not index.is_file():
        with ui.step(
            f"write torch {v}'s op_db samples ({limits.samples} per op and dtype) to {gen}"
        ):
            proc.run([python, WORKER, "gen-opinfo", gen, str(limits.samples)])
    entries = json.loads(index.read_text())
    chosen = set(pick([e["name"] for e in entries], *patterns))
    return [
        CaseSpec(
            "opinfo",
            e["name"],
            # compared at each output's dtype's tolerances (casework.judge.TOLERANCES)
            Spec(kind="opinfo", name=e["op"], data=e.get("sample", "")),
            limits.node_timeout,
            e.get("skip", ""),
        )
        for e in entries
        if e["name"] in chosen
    ]


def onnx_dir(path: Path, limits: Limits, patterns: list[str]) -> list[CaseSpec]:
    """A user's ONNX models: a file, or a folder of NAME.onnx / NAME/model.onnx."""
    if not path.exists():
        raise UsageError(f"--onnx {path}: no such file or folder")
    if path.is_file():
        models = {path.stem: path}
    else:
        models = {p.stem: p for p in sorted(path.glob("*.onnx"))}
        models.update({p.parent.name: p for p in sorted(path.glob("*/model.onnx"))})
    if not models:
        raise UsageError(f"--onnx {path}: no NAME.onnx or NAME/model.onnx in it")
    cases = []
    for name in pick(sorted(models), patterns):
        model = models[name]
        data = model.parent / "test_data_set_0" if model.name == "model.onnx" else None
        has_data = data is not None and data.is_dir()
        spec = Spec(
            kind="onnx",
            model=str(model.resolve()),
            data=str(data.resolve()) if data is not None and has_data else "",
            ort=True,
            # ONNX Runtime on random inputs as the reference: as for the torch models, the
            # largest error relative to the largest value (a model with random weights spans
            # magnitudes where an element-wise rtol fails on near-zero sums, ORT against itself
            # in another order too)
            rel_max=0.0 if has_data else 1e-3,
            reps=limits.reps,
            budget_s=limits.budget_s,
        )
        cases.append(CaseSpec(f"onnx:{path.name}", name, spec, limits.model_timeout))
    return cases


def hf_dir(path: Path) -> Path:
    """A local HuggingFace model folder, checked: config.json and weights in it."""
    if not (path / "config.json").is_file():
        raise UsageError(f"--hf {path}: no config.json in it (a HuggingFace model folder)")
    if not any(path.glob("*.safetensors")) and not any(path.glob("*.bin")):
        raise UsageError(f"--hf {path}: no weights (*.safetensors or *.bin) beside config.json")
    return path.resolve()


def hf_model(path: Path, limits: Limits) -> CaseSpec:
    """A user's HuggingFace model folder as a case of the transformers suite's kind."""
    spec = Spec(
        kind="torch",
        route="export",
        module=str(TRANSFORMERS),
        name=path.name,
        hf=str(path),
        rel_max=1e-3,
        **limits.torch_timing(),
    )
    return CaseSpec("hf", path.name, spec, limits.model_timeout)


@dataclass(frozen=True)
class Where:
    """What collecting a suite's cases needs: the interpreter that lists them (the stock
    side's), the cache the ONNX node cases are generated into, the limits, and the `-k`
    globs."""

    python: Path
    cache: Path
    limits: Limits
    patterns: list[str]


@dataclass(frozen=True)
class Suite:
    """A named suite: `help` for `--help` and the README, `cases` its collection."""

    help: str
    cases: Callable[[Where], list[CaseSpec]]


def _torchvision(w: Where) -> list[CaseSpec]:
    return torch_module("torchvision", TORCHVISION, w.python, w.limits, w.patterns)


def _transformers(w: Where) -> list[CaseSpec]:
    return torch_module("transformers", TRANSFORMERS, w.python, w.limits, w.patterns)


def _transformers_bench(w: Where) -> list[CaseSpec]:
    return torch_module("transformers-bench", TRANSFORMERS_BENCH, w.python, w.limits, w.patterns)


def _transformers_registry(w: Where) -> list[CaseSpec]:
    suite = "transformers-registry"
    return torch_module(suite, TRANSFORMERS_REGISTRY, w.python, w.limits, w.patterns)


# ONNX Runtime, the ONNX route's reference, has no bfloat16 kernel for most ops: the registry's
# float32 calls go through ONNX
REGISTRY_ONNX = ["*.float32"]


def _transformers_registry_onnx(w: Where) -> list[CaseSpec]:
    suite, py = "transformers-registry-onnx", w.python
    return torch_module(
        suite, TRANSFORMERS_REGISTRY, py, w.limits, REGISTRY_ONNX, w.patterns, route="onnx"
    )


def _transformers_onnx(w: Where) -> list[CaseSpec]:
    suite = "transformers-onnx"
    return torch_module(suite, TRANSFORMERS, w.python, w.limits, w.patterns, route="onnx")


def _onnx_node(w: Where) -> list[CaseSpec]:
    return onnx_node(w.cache, w.python, w.limits, w.patterns)


def _opinfo(w: Where) -> list[CaseSpec]:
    return opinfo(w.cache, w.python, w.limits, w.patterns)


def _device(w: Where) -> list[CaseSpec]:
    py, lim, pats = w.python, w.limits, w.patterns
    return [
        *onnx_node(w.cache, py, lim, CI_NODE, pats),
        *torch_module("torchvision", TORCHVISION, py, lim, DEVICE_MODELS, pats),
        *torch_module("transformers", TRANSFORMERS, py, lim, DEVICE_TRANSFORMERS, pats),
    ]


def _ci(w: Where) -> list[CaseSpec]:
    py, ci, pats = w.python, dataclasses.replace(w.limits, reps=0), w.patterns
    return [
        *onnx_node(w.cache, py, ci, CI_NODE, pats),
        *torch_module("torchvision", TORCHVISION, py, ci, CI_MODELS, pats),
        *torch_module("transformers", TRANSFORMERS, py, ci, CI_TRANSFORMERS, pats),
        *torch_module(
            "transformers-onnx", TRANSFORMERS, py, ci, CI_TRANSFORMERS_ONNX, pats, route="onnx"
        ),
        *torch_module("transformers-registry", TRANSFORMERS_REGISTRY, py, ci, CI_REGISTRY, pats),
        # the first sample of each op and dtype: make test's time is bounded (45 minutes)
        *opinfo(w.cache, py, dataclasses.replace(ci, samples=1), CI_OPINFO, pats),
    ]


# The registry: the CLI's choices and `--help`, `collect` and the scripts read it.
SUITES: dict[str, Suite] = {
    "torchvision": Suite("torchvision's classification and video models", _torchvision),
    "transformers": Suite(
        "HuggingFace architectures from small configs (random weights) through torch.export, "
        "at fixed and dynamic lengths and generating",
        _transformers,
    ),
    "transformers-bench": Suite(
        "HuggingFace models at their published base sizes, for timing (make bench-models)",
        _transformers_bench,
    ),
    "transformers-registry": Suite(
        "every model type of transformers' Auto registries (causal, masked and seq2seq LMs, "
        "image classifiers) from its default config made small, called with and without the "
        "cache and on a padded batch, in float32 and bfloat16",
        _transformers_registry,
    ),
    "transformers-onnx": Suite(
        "the transformers models exported to ONNX as users export them, through from_onnx",
        _transformers_onnx,
    ),
    "transformers-registry-onnx": Suite(
        "transformers-registry's float32 calls exported to ONNX as users export them, through "
        "from_onnx (ONNX Runtime the reference)",
        _transformers_registry_onnx,
    ),
    "onnx-node": Suite("ONNX's node conformance cases, from the onnx wheel", _onnx_node),
    "opinfo": Suite(
        "PyTorch's own op tests (op_db): each op's first samples (--samples) in each dtype it "
        "supports, through torch.export",
        _opinfo,
    ),
    "ci": Suite(
        f"make test's subset: {len(CI_NODE)} groups of node cases of the ops the series "
        f"changes, {len(CI_MODELS)} torchvision models, the transformers cases it fixed, "
        f"{len(CI_REGISTRY)} of transformers' registry and PyTorch's op tests of "
        f"{len(CI_OPINFO)} ops",
        _ci,
    ),
    "device": Suite(
        f"for a device through RPC: ci's node cases, "
        f"{len(DEVICE_MODELS) + len(DEVICE_TRANSFORMERS)} models",
        _device,
    ),
}


def collect(
    names: list[str],
    *,
    python: Path,
    cache: Path,
    limits: Limits,
    patterns: list[str],
    onnx_paths: list[Path],
    torch_modules: list[Path],
    hf_dirs: list[Path] | None = None,
    extra: Path | None = None,
) -> list[CaseSpec]:
    """The cases of the named suites and the user's own, filtered by `patterns` (globs: see
    `globs`)."""
    check_names(names)
    where = Where(python, cache, limits, patterns)
    cases = [c for name in names for c in SUITES[name].cases(where)]
    for p in onnx_paths:
        cases += onnx_dir(p, limits, patterns)
    for m in torch_modules:
        cases += torch_module(f"torch:{m.stem}", m.resolve(), python, limits, patterns, extra=extra)
    cases += [hf_model(d, limits) for d in hf_dirs or [] if pick([d.name], patterns)]
    return cases
