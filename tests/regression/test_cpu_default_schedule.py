"""Patch: untuned CPU builds are scheduled (performance issue: a GAN 161x slower than PyTorch).

On stock 0.26.0, `tvm.compile(mod, target="llvm")` leaves every legalized PrimFunc as serial
scalar loops. On the fork the default pipeline gives conv, conv transpose and dense
PrimFuncs parallel outer loops and a vectorized register tile, and the results still match
PyTorch. Speed is measured by scripts/bench_cpu.py, not here: this test checks the structure
the speed comes from, and the numerics.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm import relax, tirx

from .relaxrun import AVX2, host_target, import_torch, run_llvm


class Generator(torch.nn.Module):
    """A small DCGAN generator: every layer a transposed conv."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.ConvTranspose2d(32, 64, 4, 1, 0, bias=False),
            torch.nn.BatchNorm2d(64),
            torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(64, 32, 4, 2, 1, bias=False),
            torch.nn.BatchNorm2d(32),
            torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(32, 3, 4, 2, 1, bias=False),
            torch.nn.Tanh(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Convs(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.b = torch.nn.Conv2d(32, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16 * 16 * 16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.b(torch.relu(self.a(x)))
        return self.fc(y.flatten(1))


class SmallMaps(torch.nn.Module):
    """AlexNet's tail in miniature: 3x3 convs on 13x13 and 5x5 maps (widths that take no
    whole AVX2 vector), then a batch-1 dense layer."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(24, 64, 3, padding=1)
        self.b = torch.nn.Conv2d(64, 32, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(32 * 7 * 7, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.b(torch.relu(self.a(x)))
        return self.fc(y.flatten(1))


class Tokens(torch.nn.Module):
    """A transformer's MLP on 37 tokens (a prime count, as ViT-B/16's 197): dense layers
    whose rows no register tile divides."""

    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(64, 256)
        self.down = torch.nn.Linear(256, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.nn.functional.gelu(self.up(x)))


class Separable3d(torch.nn.Module):
    """S3D's separable 3-D conv in miniature: (1, 3, 3) then (3, 1, 1) over 8 frames of a
    6 x 6 map. The frames are the only axis that takes whole vectors; the temporal conv's
    padded input has 10 of them."""

    def __init__(self) -> None:
        super().__init__()
        self.spatial = torch.nn.Conv3d(24, 24, (1, 3, 3), padding=(0, 1, 1))
        self.temporal = torch.nn.Conv3d(24, 24, (3, 1, 1), padding=(1, 0, 0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.temporal(torch.relu(self.spatial(x)))


class SiLUBlock(torch.nn.Module):
    """EfficientNet's inverted residual in miniature: 1x1 conv, batch norm and SiLU, then a
    stride-2 depthwise conv on a padded map, batch norm and SiLU."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(8, 32, 1),
            torch.nn.BatchNorm2d(32),
            torch.nn.SiLU(),
            torch.nn.Conv2d(32, 32, 3, stride=2, padding=1, groups=32),
            torch.nn.BatchNorm2d(32),
            torch.nn.SiLU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Stem(torch.nn.Module):
    """A ResNet-style stem: a 7x7 stride-2 conv on 3 channels, then a 3x3 stride-2 conv."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(3, 32, 7, stride=2, padding=3)
        self.b = torch.nn.Conv2d(32, 32, 3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


class Pools(torch.nn.Module):
    """Inception's pools: a 3x3 stride-2 max pool to a 17-wide map and a 3x3 average pool
    on it, widths that take no vector."""

    def __init__(self) -> None:
        super().__init__()
        self.max = torch.nn.MaxPool2d(3, 2)
        self.avg = torch.nn.AvgPool2d(3, 1, 1, count_include_pad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.avg(self.max(x))


MODELS = {
    "dcgan": (Generator, (4, 32, 1, 1)),
    "convs_dense": (Convs, (4, 16, 16, 16)),
    "small_maps": (SmallMaps, (1, 24, 13, 13)),
    "tokens": (Tokens, (37, 64)),
    "separable_3d": (Separable3d, (1, 24, 8, 6, 6)),
    "silu": (SiLUBlock, (1, 8, 80, 80)),
    "stem": (Stem, (1, 3, 64, 64)),
    "depthwise": (lambda: torch.nn.Conv2d(96, 96, 3, padding=1, groups=96), (1, 96, 40, 40)),
}
# models whose PrimFuncs are not all vectorized (a 17-wide pool takes no vector)
SCALAR_MODELS = {
    "pools": (Pools, (1, 128, 35, 35)),
}


def _import(name: str) -> tuple[torch.nn.Module, torch.Tensor, tvm.IRModule]:
    torch.manual_seed(0)
    cls, shape = {**MODELS, **SCALAR_MODELS}[name]
    model, x = cls().eval(), torch.randn(*shape)
    return model, x, import_torch(model, x)


def _lower_avx2(name: str) -> tvm.IRModule:
    """The model `name` through the default pipeline for an AVX2 CPU."""
    _, _, mod = _import(name)
    with tvm.target.Target(AVX2):
        return relax.get_pipeline("default")(mod)


def _loop_kinds(func: tirx.PrimFunc) -> list[tirx.ForKind]:
    kinds: list[tirx.ForKind] = []
    tirx.stmt_functor.post_order_visit(
        func.body, lambda n: kinds.append(n.kind) if isinstance(n, tirx.For) else None
    )
    return kinds


def _contractions(mod: tvm.IRModule) -> dict[str, list[tirx.ForKind]]:
    """For each PrimFunc with a reduction block: the kinds of its loops."""
    out = {}
    for gv, func in mod.functions_items():
        if not isinstance(func, tirx.PrimFunc):
            continue
        kinds, reduces = [], []

        def visit(node, kinds=kinds, reduces=reduces) -> None:
            if isinstance(node, tirx.For):
                kinds.append(node.kind)
            elif isinstance(node, tirx.SBlock):
                reduces.extend(int(iv.iter_type) == 2 for iv in node.iter_vars)

        tirx.stmt_functor.post_order_visit(func.body, visit)
        if any(reduces):
            out[gv.name_hint] = kinds
    return out


@pytest.mark.parametrize("name", list(MODELS))
def test_default_llvm_pipeline_parallelizes_and_vectorizes(name: str) -> None:
    _, _, mod = _import(name)
    target = tvm.target.Target("llvm")
    with target:
        lowered = relax.get_pipeline("default")(mod)
    funcs = _contractions(lowered)
    assert funcs, "no conv/dense PrimFunc found"
    serial = [f for f, kinds in funcs.items() if tirx.ForKind.VECTORIZED not in kinds]
    assert not serial, f"left as serial scalar loops by the default llvm pipeline: {serial}"
    big = [f for f, kinds in funcs.items() if tirx.ForKind.PARALLEL in kinds]
    assert big, f"no contraction runs in parallel: {sorted(funcs)}"


@pytest.mark.parametrize("name", list(MODELS))
def test_results_match_pytorch(name: str) -> None:
    model, x, mod = _import(name)
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=1e-4, atol=1e-4)


class SliceScatter(torch.nn.Module):
    """swin_t's shifted-window mask writes a slice with slice_scatter, whose legalized TIR
    combines two bool buffers (`full(True) and arange < end`)."""

    def forward(self, x: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        return torch.slice_scatter(x, src, dim=1, start=0, end=35)


def test_bool_blocks_compile_and_match_pytorch() -> None:
    """The schedule must not vectorize bool loads: a vector `and` of two bool buffers stopped
    the fork's compile (`b_ty.MatchesCode(kDLBool)`) where stock compiles (torchvision swin_t,
    found by the conformance lane)."""
    rng = np.random.default_rng(0)
    args = (
        torch.tensor(rng.standard_normal((35, 42)).astype("float32")),
        torch.tensor(rng.standard_normal((35, 35)).astype("float32")),
    )
    from tvm.relax.frontend.torch import from_exported_program

    mod = from_exported_program(torch.export.export(SliceScatter().eval(), args))
    expected = SliceScatter()(*args).numpy()
    np.testing.assert_array_equal(run_llvm(mod, *[a.numpy() for a in args]), expected)


class Permute(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.permute(0, 2, 3, 1).contiguous() * 2.0


def test_transposes_are_tiled_and_match_pytorch() -> None:
    """NCHW -> NHWC at run time: the innermost loop reads across rows of the input, so the
    schedule tiles it 32 x 32 (and folds a constant weight's transpose the same way)."""
    x = torch.randn(2, 64, 24, 96)
    mod = import_torch(Permute(), x)
    np.testing.assert_array_equal(run_llvm(mod, x.numpy()), Permute()(x).numpy())


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_float8_casts_compile_and_match_numpy(dtype: str) -> None:
    """TVM emulates float8 in software on scalar code: a vectorized cast stopped the fork's
    compile ("if_then_else can only take scalar condition") where stock compiles."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.linspace(-4, 4, 64, dtype="float32").reshape(2, 32).astype(getattr(ml_dtypes, dtype))
    bb = relax.BlockBuilder()
    param = relax.Var("x", relax.TensorType((2, 32), dtype))
    with bb.function("main", [param]):
        out = bb.emit(relax.op.astype(param, "float32"))
        bb.emit_func_output(out)
    got = run_llvm(bb.get(), x)
    np.testing.assert_array_equal(got, x.astype("float32"))


def _reduction_vector_extents(mod: tvm.IRModule) -> dict[str, list[int]]:
    """For each contraction PrimFunc: the extents of the vectorized loops around its
    reduction (update) block."""

    def reduces(stmt) -> bool:
        found = []
        tirx.stmt_functor.post_order_visit(
            stmt,
            lambda n: (
                found.append(n)
                if isinstance(n, tirx.SBlock) and any(int(iv.iter_type) == 2 for iv in n.iter_vars)
                else None
            ),
        )
        return bool(found)

    out: dict[str, list[int]] = {}
    for gv, func in mod.functions_items():
        if not isinstance(func, tirx.PrimFunc) or gv.name_hint not in _contractions(mod):
            continue
        extents: list[int] = []
        tirx.stmt_functor.post_order_visit(
            func.body,
            lambda n, e=extents: (
                e.append(int(n.extent))
                if isinstance(n, tirx.For) and n.kind == tirx.ForKind.VECTORIZED and reduces(n.body)
                else None
            ),
        )
        out[gv.name_hint] = extents
    return out


def _predicated(mod: tvm.IRModule, names) -> list[str]:
    """The PrimFuncs of `mod` named in `names` with a block under a predicate (`T.where`)."""
    return [
        gv.name_hint
        for gv, func in mod.functions_items()
        if gv.name_hint in names and "T.where" in func.script()
    ]


def test_avx2_tiles_take_whole_vectors() -> None:
    """For an AVX2 CPU (8 float32 lanes; llvm_get_vector_width says 512 on every x86-64)
    each contraction's vector loop is a whole number of 8-lane vectors: on a 13-wide map the
    output channels are vectorized, not 13 (or 9) lanes of the width."""
    lowered = _lower_avx2("small_maps")
    extents = _reduction_vector_extents(lowered)
    assert extents and all(e and all(n % 8 == 0 for n in e) for e in extents.values()), extents


def test_prime_token_count_tiles_whole_vectors_without_a_predicate() -> None:
    """37 rows: the fork pads them to whole row tiles (a predicated tile makes every step of
    the reduction conditional and halved ViT-B/16's dense layers' speed) and vectorizes the
    features in whole AVX2 vectors; stock leaves the dense layers serial and scalar."""
    lowered = _lower_avx2("tokens")
    extents = _reduction_vector_extents(lowered)
    assert extents and all(e and all(n % 8 == 0 for n in e) for e in extents.values()), extents
    predicated = _predicated(lowered, extents)
    assert not predicated, f"row tiles under a predicate: {predicated}"


def test_host_target_results_match_pytorch() -> None:
    """The same model compiled for the host's own ISA (`Target.from_device`, less what the host
    lacks: relaxrun.host_target), as users who ask for it get it."""
    model, x, mod = _import("small_maps")
    host = host_target()
    vm = relax.VirtualMachine(tvm.compile(mod, target=host), tvm.cpu())
    got = vm["main"](tvm.runtime.tensor(x.numpy()))
    with torch.no_grad():
        expected = model(x).numpy()
    got = (got if isinstance(got, tvm.runtime.Tensor) else got[0]).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def _loop_kinds_of_funcs_calling(mod: tvm.IRModule, op: str) -> dict[str, list[tirx.ForKind]]:
    return {
        gv.name_hint: _loop_kinds(func)
        for gv, func in mod.functions_items()
        if isinstance(func, tirx.PrimFunc) and f"T.{op}(" in func.script()
    }


def test_sigmoid_blocks_are_vectorized() -> None:
    """A batch norm and SiLU (x * sigmoid(x)) is vectorized: sigmoid has no llvm rule of its
    own, only the generic 1 / (1 + exp(-x)), and the fork's rule took it for a call LLVM
    cannot vectorize, so EfficientNet's SiLUs ran one element at a time (a quarter of its
    time). Stock schedules nothing."""
    _, _, mod = _import("silu")
    with tvm.target.Target("llvm"):
        lowered = relax.get_pipeline("default")(mod)
    funcs = _loop_kinds_of_funcs_calling(lowered, "sigmoid")
    assert funcs, "no PrimFunc computes a sigmoid"
    scalar = [f for f, kinds in funcs.items() if tirx.ForKind.VECTORIZED not in kinds]
    assert not scalar, f"sigmoid left scalar: {scalar}"


def _gathered_loads(func: tirx.PrimFunc) -> list[str]:
    """Loads inside a vectorized loop whose index steps by more than one element a lane."""
    found: list[str] = []

    def visit_loop(loop) -> None:
        if not (isinstance(loop, tirx.For) and loop.kind == tirx.ForKind.VECTORIZED):
            return

        def visit_block(realize) -> None:
            if not isinstance(realize, tirx.SBlockRealize):
                return
            block = realize.block
            values = realize.iter_values
            binding = {iv.var: v for iv, v in zip(block.iter_vars, values, strict=True)}

            def visit_load(node) -> None:
                if isinstance(node, tirx.BufferLoad):
                    for index in node.indices:
                        index = tirx.stmt_functor.substitute(index, binding)
                        coeffs = tvm.arith.detect_linear_equation(index, [loop.loop_var])
                        if coeffs and int(coeffs[0]) not in (0, 1):
                            found.append(f"{node.buffer.name}[{index}]")

            tirx.stmt_functor.post_order_visit(block.body, visit_load)

        tirx.stmt_functor.post_order_visit(loop.body, visit_block)

    tirx.stmt_functor.post_order_visit(func.body, visit_loop)
    return found


def test_strided_convs_take_whole_vectors_without_gathers() -> None:
    """A stride-2 conv reads its input 2 elements apart along the output's width and height:
    the fork vectorizes its output channels instead (vectors of the width were gathered lane
    by lane: a 7x7 stride-2 stem ran at a quarter of the speed). Stock schedules nothing."""
    lowered = _lower_avx2("stem")
    convs = {
        gv.name_hint: func
        for gv, func in lowered.functions_items()
        if isinstance(func, tirx.PrimFunc) and "conv2d" in gv.name_hint
    }
    assert len(convs) == 2, sorted(convs)
    extents = _reduction_vector_extents(lowered)
    assert all(extents[name] and all(n % 8 == 0 for n in extents[name]) for name in convs)
    gathered = {name: _gathered_loads(func) for name, func in convs.items()}
    assert not any(gathered.values()), gathered


def test_pools_run_in_parallel_without_a_local_accumulator() -> None:
    """A pool whose tile is a single point (a 17-wide map takes no vector) accumulates in its
    output: a one-element local buffer was allocated from the workspace pool on every
    iteration of the parallel loop, and Inception-v3's pools ran 5x to 8x slower. Stock
    schedules nothing."""
    lowered = _lower_avx2("pools")
    pools = {
        gv.name_hint: func
        for gv, func in lowered.functions_items()
        if isinstance(func, tirx.PrimFunc) and "pool" in gv.name_hint
    }
    assert len(pools) == 2, sorted(pools)
    for name, kinds in _contractions(lowered).items():
        assert tirx.ForKind.PARALLEL in kinds, f"{name} is serial"
    local = [name for name, func in pools.items() if 'scope="local"' in func.script()]
    assert not local, f"one-point tiles accumulated in a local buffer: {local}"


def test_pools_match_pytorch() -> None:
    model, x, mod = _import("pools")
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=1e-5, atol=1e-6)


def test_conv_tiles_accumulate_without_a_workspace_allocation() -> None:
    """Each parallel iteration's register tile is a stack array, not a buffer from the
    workspace pool: a "local" accumulator was allocated and freed on every iteration, half of
    a depthwise conv's time. Stock has no parallel loop at all."""
    target = tvm.target.Target(AVX2)
    lowered = _lower_avx2("depthwise")
    convs = [
        func.with_attr("global_symbol", "main")
        for gv, func in lowered.functions_items()
        if isinstance(func, tirx.PrimFunc) and "conv2d" in gv.name_hint
    ]
    assert convs
    for func in convs:
        ll = tvm.tirx.build(tvm.IRModule({"main": func}), target=target).inspect_source("ll")
        funcs = ll.split("\ndefine ")
        lambdas = [f for f in funcs if "@__tvm_parallel_lambda" in f.split("\n")[0]]
        assert lambdas, "no parallel loop"
        assert not any("AllocWorkspace" in f for f in lambdas), "workspace allocation per iteration"
