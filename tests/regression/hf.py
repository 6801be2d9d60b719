"""transformers in regression tests: imported after the conformance lane's torchvision shim
(transformers imports torchvision, whose PyPI wheel does not load beside the CPU torch)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

CONFORMANCE = Path(__file__).resolve().parents[2] / "python/tvmfork/conformance"
SHIM = CONFORMANCE / "torchvision_shim.py"


def transformers() -> Any:
    spec = importlib.util.spec_from_file_location("torchvision_shim", SHIM)
    assert spec is not None and spec.loader is not None
    shim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shim)
    shim.load()
    import transformers as hf

    return hf


def _table() -> Any:
    """The conformance suite's table of transformers models (transformers_models.py)."""
    transformers()
    spec = importlib.util.spec_from_file_location(
        "transformers_models", CONFORMANCE / "transformers_models.py"
    )
    assert spec is not None and spec.loader is not None
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    return table


def decoder_lm(name: str, **config: Any) -> Any:
    """The conformance suite's decoder LM `name` (its small config, `config` keys changed),
    built with random weights: the HF model itself, not the suite's wrapper."""
    wrapped, _ = _table().DECODER_LMS[name].with_config(**config)()
    return wrapped.model


def on_ids(model: Any, output: str, **call: Any) -> Any:
    """`model` as the suite wraps it: called on token ids (`model(input_ids=ids, **call)`),
    returning the output named `output` (logits, last_hidden_state)."""
    return _table().Wrapped(model, ("input_ids",), output, call).eval()
