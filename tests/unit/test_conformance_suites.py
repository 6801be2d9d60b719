"""Conformance suites as data: how a user's ONNX folder becomes cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from tvmfork.conformance import suites
from tvmfork.conformance.casework import catalog
from tvmfork.errors import UsageError

pytestmark = pytest.mark.unit


def test_onnx_folder_cases_and_their_comparison(tmp_path: Path) -> None:
    """With ONNX's test data beside a model, its rtol/atol compare; without, ONNX Runtime on
    random inputs is the reference and the relative max error compares (a random-weight model's
    outputs span magnitudes where an element-wise rtol fails on near-zero sums)."""
    (tmp_path / "plain.onnx").write_bytes(b"")
    (tmp_path / "withdata" / "test_data_set_0").mkdir(parents=True)
    (tmp_path / "withdata" / "model.onnx").write_bytes(b"")
    cases = {c.name: c for c in suites.onnx_dir(tmp_path, suites.Limits(), [])}
    assert sorted(cases) == ["plain", "withdata"]
    assert cases["plain"].spec.data == "" and cases["plain"].spec.rel_max == 1e-3
    assert cases["withdata"].spec.data.endswith("test_data_set_0")
    assert cases["withdata"].spec.rel_max == 0.0
    assert all(c.suite == f"onnx:{tmp_path.name}" for c in cases.values())
    with pytest.raises(UsageError, match=r"no NAME\.onnx"):
        suites.onnx_dir(tmp_path / "withdata" / "test_data_set_0", suites.Limits(), [])


def test_hf_folder_is_checked_and_becomes_one_case(tmp_path: Path) -> None:
    model = tmp_path / "my-llama"
    model.mkdir()
    with pytest.raises(UsageError, match=r"no config\.json"):
        suites.hf_dir(model)
    (model / "config.json").write_text("{}")
    with pytest.raises(UsageError, match="no weights"):
        suites.hf_dir(model)
    (model / "model.safetensors").write_bytes(b"")
    case = suites.hf_model(suites.hf_dir(model), suites.Limits(reps=0))
    assert (case.suite, case.name) == ("hf", "my-llama")
    assert case.spec.hf == str(model.resolve())
    assert case.spec.module == str(suites.TRANSFORMERS) and case.spec.kind == "torch"


def test_transformers_suites_name_their_route(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same module feeds both transformers suites: torch.export (with the -dynamic and
    -generate cases) and ONNX (without them: a dynamic length and the static-cache export are
    torch.export's)."""
    names = ["llama", "llama-dynamic", "llama-generate", "bert"]

    def fake_list(python: Path, *args: object, extra: Path | None = None) -> dict[str, list[str]]:
        return {"cases": names}

    import tvmfork.conformance.suites as mod

    original = mod._worker_json
    mod._worker_json = fake_list  # type: ignore[assignment]
    try:
        export = suites.torch_module(
            "transformers", suites.TRANSFORMERS, Path("py"), suites.Limits()
        )
        onnx = suites.torch_module(
            "transformers-onnx", suites.TRANSFORMERS, Path("py"), suites.Limits(), route="onnx"
        )
    finally:
        mod._worker_json = original  # type: ignore[assignment]
    assert [c.name for c in export] == names
    assert {c.spec.route for c in export} == {"export"}
    assert [c.name for c in onnx] == ["llama", "bert"]
    assert {c.spec.route for c in onnx} == {"onnx"}
    assert not any(c.spec.ort for c in onnx)  # ORT is the reference, not a timing anchor


def test_the_registry_through_onnx_takes_its_float32_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """transformers-registry-onnx: the registry's cases in float32 only (ONNX Runtime, the
    reference, has no bfloat16 kernel for most ops), on the ONNX route, still filtered by -k."""
    names = ["llama.lm-nocache.float32", "llama.lm-nocache.bfloat16", "bert.mlm-padded.float32"]

    def fake_list(python: Path, *args: object, extra: Path | None = None) -> dict[str, list[str]]:
        return {"cases": names}

    monkeypatch.setattr(suites, "_worker_json", fake_list)
    where = suites.Where(Path("py"), Path("cache"), suites.Limits(), [])
    cases = suites.SUITES["transformers-registry-onnx"].cases(where)
    assert [c.name for c in cases] == ["llama.lm-nocache.float32", "bert.mlm-padded.float32"]
    assert {(c.suite, c.spec.route) for c in cases} == {("transformers-registry-onnx", "onnx")}
    picked = suites.Where(Path("py"), Path("cache"), suites.Limits(), ["bert.*"])
    assert [c.name for c in suites.SUITES["transformers-registry-onnx"].cases(picked)] == [
        "bert.mlm-padded.float32"
    ]


def test_a_suite_that_cannot_be_imported_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The worker reports why it could not list the module; the user is told which module and
    that a package it needs comes with --with."""

    def fake_list(python: Path, *args: object, extra: Path | None = None) -> dict[str, str]:
        return {"error": "ModuleNotFoundError: No module named 'einops'"}

    monkeypatch.setattr(suites, "_worker_json", fake_list)
    module = tmp_path / "mine.py"
    module.write_text("import einops\n")
    with pytest.raises(UsageError, match=r"mine\.py: importing it failed: .*'einops'.*--with"):
        suites.torch_module("torch:mine", module, Path("py"), suites.Limits())


def test_one_rule_for_k_globs_and_unknown_suites() -> None:
    """-k repeats and takes comma-separated globs (the rule scripts/multi_isa.py imports from
    the same module); an unknown suite is a usage error before anything is built."""
    assert catalog.globs(["resnet18,mobilenet_v2", " vit* ", ""]) == [
        "resnet18",
        "mobilenet_v2",
        "vit*",
    ]
    assert catalog.pick(["resnet18", "vit_b_16", "alexnet"], catalog.globs(["resnet18,vit*"])) == [
        "resnet18",
        "vit_b_16",
    ]
    with pytest.raises(UsageError, match="unknown suite 'torchvison'"):
        suites.check_names(["torchvision", "torchvison"])


def test_the_registry_is_what_the_cli_and_the_scripts_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every suite of the registry is in `--help`, and each torch-module suite the scripts
    name by its file is the registry's; the -k rule of scripts/multi_isa.py is catalog's."""
    from tvmfork.args import parser

    monkeypatch.setenv("COLUMNS", "2000")  # no line breaks inside a name
    conformance = parser()._subparsers._group_actions[0].choices["conformance"]  # type: ignore[union-attr]
    text = conformance.format_help()
    for name in suites.SUITES:
        assert f"{name}:" in text, name
    assert set(catalog.TORCH_MODULES) <= set(suites.SUITES)
    assert all(p.is_file() for p in catalog.TORCH_MODULES.values())
    script = (Path(__file__).parents[2] / "scripts" / "multi_isa.py").read_text()
    assert "from casework.catalog import globs, pick" in script
    assert 'split(",")' not in script


def test_the_bench_suite_times_every_anchor_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """`transformers-bench` is collected from its own module like any torch-module suite; its
    cases carry the anchors the run asked for (ORT, torch.compile) when timed, none untimed."""
    monkeypatch.setattr(suites, "_worker_json", lambda *a, **k: {"cases": ["bert-base"]})
    timed = suites.Limits(reps=5, ort=True, inductor=True)
    kw = {"python": Path("py"), "cache": Path("c"), "patterns": [], "onnx_paths": []}
    (case,) = suites.collect(["transformers-bench"], limits=timed, torch_modules=[], **kw)
    assert Path(case.spec.module) == suites.TRANSFORMERS_BENCH
    assert (case.spec.reps, case.spec.ort, case.spec.inductor) == (5, True, True)
    untimed = suites.Limits(reps=0, ort=True, inductor=True)
    (case,) = suites.collect(["transformers-bench"], limits=untimed, torch_modules=[], **kw)
    assert (case.spec.ort, case.spec.inductor) == (False, False)
