"""The `transformers-bench` suite: HuggingFace models at the sizes users run, for timing.

The `transformers` suite builds each architecture small (2 layers, 64 wide) to prove it
compiles and computes right; its times are mostly per-call overhead. These cases build the
published base configurations (BERT-base, ViT-B/16, Whisper-tiny's encoder on 30 s of audio,
...) from transformers' own config classes, with random weights (nothing downloaded), at the
input sizes the speed goals name: 64 tokens of text, 224-pixel images (SegFormer: 256), 1 s of
16 kHz audio, 3000 mel frames. `make bench-models` times them against PyTorch eager, ONNX
Runtime and torch.compile. The worker imports this file by path beside `transformers_models`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

try:  # imported by path in the worker, whose folder is on sys.path
    from transformers_models import Wrapped  # type: ignore[import-not-found]
except ImportError:  # imported as part of tvmfork
    from tvmfork.conformance.transformers_models import Wrapped

TOKENS = 64
PIXELS = 224
SAMPLES = 16000  # 1 s at 16 kHz
MEL_FRAMES = 3000  # Whisper's 30 s window

# DeBERTa-v3-base (transformers' DebertaV2Config defaults are the 1.5 B xlarge)
DEBERTA_V3_BASE = {
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "relative_attention": True,
    "position_buckets": 256,
    "norm_rel_ebd": "layer_norm",
    "share_att_key": True,
    "pos_att_type": ["p2c", "c2p"],
    "max_relative_positions": -1,
    "position_biased_input": False,
}
# BLOOM-560m (BloomConfig defaults are a 2-layer toy)
BLOOM_560M = {"hidden_size": 1024, "n_layer": 24, "n_head": 16}
# SmolLM-135M, a Llama of the size small-device users run
SMOLLM_135M = {
    "hidden_size": 576,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "intermediate_size": 1536,
    "vocab_size": 49152,
    "tie_word_embeddings": True,
}


def _text(vocab: int) -> dict[str, torch.Tensor]:
    return {"input_ids": torch.randint(0, vocab, (1, TOKENS))}


def _case(
    model_type: str,
    cls: str,
    output: str,
    feed: Callable[[Any], dict[str, torch.Tensor]],
    config: dict[str, Any] | None = None,
    part: Callable[[Any], Any] | None = None,
    dtype: torch.dtype | None = None,
) -> Callable[[], tuple[Any, ...]]:
    """A case: transformers' `cls` built from `model_type`'s default config updated with
    `config` (or the sub-module `part` of it), fed `feed(config)`, returning `output`; in
    `dtype` (weights and float inputs, as a checkpoint stored in it loads) where given, then
    with {"float32": the same rounded weights in float32} (torch_route.run_torch's options):
    a half-precision output is held to be as close to that float32 computation as PyTorch's
    own, as the registry's half-precision cases are (5 bfloat16 steps of PyTorch's result is
    no bound where PyTorch's bfloat16 kernels round differently on each CPU)."""

    def make() -> tuple[Any, ...]:
        import copy

        import transformers

        cfg = transformers.AutoConfig.for_model(model_type, **(config or {}))
        model = getattr(transformers, cls)(cfg).eval()
        if part is not None:
            model = part(model)
        inputs = feed(cfg)
        if dtype is None:
            return Wrapped(model, tuple(inputs), output), tuple(inputs.values())
        model = model.to(dtype)
        inputs = {k: v.to(dtype) if v.is_floating_point() else v for k, v in inputs.items()}
        wide = Wrapped(copy.deepcopy(model).float(), tuple(inputs), output)
        called = Wrapped(model, tuple(inputs), output)
        return called, tuple(inputs.values()), {"float32": wide}

    return make


def _ids(cfg: Any) -> dict[str, torch.Tensor]:
    return _text(cfg.vocab_size)


def _pixels(size: int = PIXELS) -> Callable[[Any], dict[str, torch.Tensor]]:
    return lambda cfg: {"pixel_values": torch.randn(1, 3, size, size)}


def _audio(cfg: Any) -> dict[str, torch.Tensor]:
    return {"input_values": torch.randn(1, SAMPLES)}


def _mel(cfg: Any) -> dict[str, torch.Tensor]:
    return {"input_features": torch.randn(1, cfg.num_mel_bins, MEL_FRAMES)}


HIDDEN = "last_hidden_state"

CASES: dict[str, Callable[[], tuple[Any, ...]]] = {
    # text encoders, 64 tokens
    "bert-base": _case("bert", "BertModel", HIDDEN, _ids),
    "distilbert-base": _case("distilbert", "DistilBertModel", HIDDEN, _ids),
    "roberta-base": _case("roberta", "RobertaModel", HIDDEN, _ids, {"pad_token_id": 1}),
    "deberta-v3-base": _case("deberta-v2", "DebertaV2Model", HIDDEN, _ids, DEBERTA_V3_BASE),
    "t5-small-encoder": _case("t5", "T5EncoderModel", HIDDEN, _ids),
    # decoder LMs, a 64-token prompt, logits
    "gpt2": _case("gpt2", "GPT2LMHeadModel", "logits", _ids),
    "opt-125m": _case("opt", "OPTForCausalLM", "logits", _ids),
    "bloom-560m": _case("bloom", "BloomForCausalLM", "logits", _ids, BLOOM_560M),
    "smollm-135m": _case("llama", "LlamaForCausalLM", "logits", _ids, SMOLLM_135M),
    # vision, 224 px
    "vit-base": _case("vit", "ViTModel", HIDDEN, _pixels()),
    "dinov2-base": _case("dinov2", "Dinov2Model", HIDDEN, _pixels()),
    "siglip-vision-base": _case("siglip_vision_model", "SiglipVisionModel", HIDDEN, _pixels()),
    "swin-tiny": _case("swin", "SwinModel", HIDDEN, _pixels()),
    "convnext-tiny": _case("convnext", "ConvNextModel", HIDDEN, _pixels()),
    "segformer-b0": _case("segformer", "SegformerForSemanticSegmentation", "logits", _pixels(256)),
    # audio
    "whisper-tiny-encoder": _case(
        "whisper", "WhisperModel", HIDDEN, _mel, part=lambda m: m.get_encoder()
    ),
    "wav2vec2-base": _case("wav2vec2", "Wav2Vec2Model", HIDDEN, _audio),
    "hubert-base": _case("hubert", "HubertModel", HIDDEN, _audio),
    # bfloat16 checkpoints, loaded as stored (PyTorch eager runs them in bfloat16 too)
    "bert-base.bfloat16": _case("bert", "BertModel", HIDDEN, _ids, dtype=torch.bfloat16),
    "smollm-135m.bfloat16": _case(
        "llama", "LlamaForCausalLM", "logits", _ids, SMOLLM_135M, dtype=torch.bfloat16
    ),
    "vit-base.bfloat16": _case("vit", "ViTModel", HIDDEN, _pixels(), dtype=torch.bfloat16),
}
