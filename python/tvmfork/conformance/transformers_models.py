"""The `transformers` conformance suite: HuggingFace architectures as a torch-module suite.

Each case builds one of transformers' own model classes from a small config (random weights,
seeded by the worker, nothing downloaded), wrapped to take tensors positionally and return
the one output a user reads (logits, or the last hidden state of an encoder), as a user
exports it: `torch.export.export(model, inputs)`. Like `torchvision_models.py`, the worker
imports this file by path inside the venv under test and it uses only that venv's packages.

The table covers decoder LMs (dense, GQA/MQA, sliding window, parallel attention/MLP, ALiBi,
partial and full RoPE, MoE), encoders, encoder-decoders run whole (with decoder input ids),
vision, audio, multimodal towers and state-space models. Each decoder LM and text encoder is
also a `NAME-dynamic` case: its sequence length exported as a symbol (`torch.export.Dim`),
compiled once and run at `SIZES` tokens (the worker's `run_dynamic`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

SEQ = 16  # tokens of the example input
VOCAB = 512
# A small text model: 2 layers, 64 wide, 4 heads of 16 (2 key/value heads where the
# architecture groups them); each entry below names its own config keys.
TEXT = {
    "vocab_size": VOCAB,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "max_position_embeddings": 128,
}
GQA = {**TEXT, "num_key_value_heads": 2}
VISION = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "image_size": 64,
    "patch_size": 8,
}
AUDIO = {
    "vocab_size": 32,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "conv_dim": (32, 32, 32),
    "conv_stride": (5, 4, 2),
    "conv_kernel": (10, 4, 2),
    "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 4,
    "do_stable_layer_norm": False,
}
T5 = {"vocab_size": VOCAB, "d_model": 64, "d_kv": 16, "d_ff": 128, "num_layers": 2, "num_heads": 4}
# BART-style encoder-decoders (BART, Marian, Whisper): 2 + 2 layers, 64 wide, 4 heads
ENCODER_DECODER = {
    "vocab_size": VOCAB,
    "d_model": 64,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 128,
    "decoder_ffn_dim": 128,
}
SAMPLES = 4000  # audio samples of the example input (a quarter second at 16 kHz)


class Wrapped(torch.nn.Module):  # type: ignore[misc]
    """The model called with its named inputs (and `call`'s fixed keyword arguments, such as
    use_cache=False), returning one output (by attribute name)."""

    def __init__(
        self,
        model: torch.nn.Module,
        names: tuple[str, ...],
        output: str,
        call: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.names = names
        self.output = output
        self.call = call or {}

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        out = self.model(**dict(zip(self.names, args, strict=True)), **self.call)
        value: torch.Tensor = getattr(out, self.output)
        return value


def _ids(n: int = SEQ, vocab: int = VOCAB) -> torch.Tensor:
    return torch.randint(0, vocab, (1, n))


class Make:
    """A case's constructor: `make()` builds (wrapped model, inputs) from the config;
    `with_config(**over)` is the same case with some config keys changed, `calling(**kw)` the
    same model called with more keyword arguments. (A plain class: the worker imports this
    file by path, outside sys.modules, where a dataclass cannot be made.)"""

    def __init__(
        self,
        model_type: str,
        auto: str,
        config: dict[str, Any],
        inputs: Callable[[], dict[str, torch.Tensor]],
        output: str,
        call: dict[str, Any] | None = None,
    ) -> None:
        self.model_type, self.auto, self.config = model_type, auto, config
        self.inputs, self.output, self.call = inputs, output, call or {}

    def __call__(self) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
        import transformers

        cfg = transformers.AutoConfig.for_model(self.model_type, **self.config)
        cls = getattr(transformers, self.auto)
        # SDPA attention where the architecture has it (transformers' default)
        model = cls.from_config(cfg) if self.auto.startswith("Auto") else cls(cfg)
        feed = self.inputs()
        return Wrapped(model.eval(), tuple(feed), self.output, self.call), tuple(feed.values())

    def with_config(self, **over: Any) -> Make:
        config = {**self.config, **over}
        return Make(self.model_type, self.auto, config, self.inputs, self.output, self.call)

    def calling(self, **kw: Any) -> Make:
        call = {**self.call, **kw}
        return Make(self.model_type, self.auto, self.config, self.inputs, self.output, call)


def _lm(model_type: str, config: dict[str, Any]) -> Callable[..., Any]:
    return Make(model_type, "AutoModelForCausalLM", config, lambda: {"input_ids": _ids()}, "logits")


def _encoder(
    model_type: str, config: dict[str, Any], auto: str = "AutoModel"
) -> Callable[..., Any]:
    return Make(model_type, auto, config, lambda: {"input_ids": _ids()}, "last_hidden_state")


def _seq2seq(model_type: str, config: dict[str, Any]) -> Callable[..., Any]:
    def feed() -> dict[str, torch.Tensor]:
        return {"input_ids": _ids(), "decoder_input_ids": _ids(8)}

    return Make(model_type, "AutoModelForSeq2SeqLM", config, feed, "logits")


def _image(
    model_type: str, config: dict[str, Any], size: int = 64, auto: str = "AutoModel"
) -> Callable[..., Any]:
    def feed() -> dict[str, torch.Tensor]:
        return {"pixel_values": torch.randn(1, 3, size, size)}

    output = "logits" if auto.startswith("AutoModelFor") else "last_hidden_state"
    return Make(model_type, auto, config, feed, output)


def _audio(model_type: str, config: dict[str, Any]) -> Callable[..., Any]:
    return Make(
        model_type,
        "AutoModel",
        config,
        lambda: {"input_values": torch.randn(1, SAMPLES)},
        "last_hidden_state",
    )


# --- the table ------------------------------------------------------------------------------

DECODER_LMS: dict[str, Callable[..., Any]] = {
    # absolute positions, fused qkv (Conv1D)
    "gpt2": _lm("gpt2", {"vocab_size": VOCAB, "n_embd": 64, "n_layer": 2, "n_head": 4}),
    # multi-query attention
    "gpt_bigcode": _lm(
        "gpt_bigcode", {"vocab_size": VOCAB, "n_embd": 64, "n_layer": 2, "n_head": 4}
    ),
    # RoPE, GQA
    "llama": _lm("llama", GQA),
    # sliding window attention (window shorter than the example)
    "mistral": _lm("mistral", {**GQA, "sliding_window": 8}),
    "qwen2": _lm("qwen2", GQA),
    # q/k norms
    "qwen3": _lm("qwen3", {**GQA, "head_dim": 16}),
    # MQA (one key/value head), scaled embeddings, GELU-tanh MLP
    "gemma": _lm("gemma", {**TEXT, "num_key_value_heads": 1, "head_dim": 16}),
    # alternating sliding/global layers, logit soft-capping
    "gemma2": _lm("gemma2", {**GQA, "head_dim": 16, "sliding_window": 8}),
    "phi3": _lm("phi3", {**GQA, "pad_token_id": 0}),
    # partial RoPE, parallel attention and MLP
    "gpt_neox": _lm("gpt_neox", {**TEXT, "rotary_pct": 0.25}),
    "phi": _lm("phi", {**TEXT, "partial_rotary_factor": 0.5}),
    "stablelm": _lm("stablelm", {**GQA, "partial_rotary_factor": 0.25}),
    "gptj": _lm(
        "gptj", {"vocab_size": VOCAB, "n_embd": 64, "n_layer": 2, "n_head": 4, "rotary_dim": 8}
    ),
    "olmo": _lm("olmo", TEXT),
    "olmo2": _lm("olmo2", GQA),
    "starcoder2": _lm("starcoder2", {**GQA, "sliding_window": 8}),
    "granite": _lm("granite", GQA),
    "cohere": _lm("cohere", GQA),
    # learned positions with an offset
    "opt": _lm(
        "opt",
        {
            "vocab_size": VOCAB,
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "ffn_dim": 128,
            "word_embed_proj_dim": 64,
            "max_position_embeddings": 128,
        },
    ),
    # ALiBi
    "bloom": _lm("bloom", {"vocab_size": VOCAB, "hidden_size": 64, "n_layer": 2, "n_head": 4}),
    "mpt": _lm(
        "mpt", {"vocab_size": VOCAB, "d_model": 64, "n_layers": 2, "n_heads": 4, "max_seq_len": 128}
    ),
    # MQA with parallel attention (the original Falcon layout)
    "falcon": _lm(
        "falcon",
        {
            "vocab_size": VOCAB,
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "multi_query": True,
            "parallel_attn": True,
            "new_decoder_architecture": False,
        },
    ),
    # mixture of experts (top-2 of 4)
    "mixtral": _lm("mixtral", {**GQA, "num_local_experts": 4, "num_experts_per_tok": 2}),
    "qwen2_moe": _lm(
        "qwen2_moe",
        {
            **GQA,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 64,
            "shared_expert_intermediate_size": 64,
        },
    ),
}

TEXT_ENCODERS: dict[str, Callable[..., Any]] = {
    "bert": _encoder("bert", TEXT),
    "roberta": _encoder("roberta", {**TEXT, "pad_token_id": 1}),
    "xlm-roberta": _encoder("xlm-roberta", {**TEXT, "pad_token_id": 1}),
    "albert": _encoder("albert", {**TEXT, "embedding_size": 32}),
    "electra": _encoder("electra", {**TEXT, "embedding_size": 32}),
    "deberta-v2": _encoder("deberta-v2", TEXT),
    # DeBERTa-v3's relative attention: positions beyond 4 take the log buckets
    "deberta-v3": _encoder(
        "deberta-v2",
        {
            **TEXT,
            "relative_attention": True,
            "position_buckets": 8,
            "pos_att_type": ["p2c", "c2p"],
            "max_relative_positions": -1,
            "position_biased_input": False,
            "norm_rel_ebd": "layer_norm",
            "share_att_key": True,
        },
    ),
    "distilbert": _encoder(
        "distilbert",
        {"vocab_size": VOCAB, "dim": 64, "n_layers": 2, "n_heads": 4, "hidden_dim": 128},
    ),
    "mpnet": _encoder("mpnet", TEXT),
    # T5's encoder alone (relative position buckets)
    "t5-encoder": Make(
        "t5",
        "T5EncoderModel",
        T5,
        lambda: {"input_ids": _ids()},
        "last_hidden_state",
    ),
    # multimodal towers: the text halves
    "clip-text": _encoder("clip_text_model", TEXT, "CLIPTextModel"),
    "siglip-text": _encoder("siglip_text_model", TEXT, "SiglipTextModel"),
}

ENCODER_DECODERS: dict[str, Callable[..., Any]] = {
    "t5": _seq2seq("t5", {**T5, "decoder_start_token_id": 0}),
    "bart": _seq2seq("bart", {**ENCODER_DECODER, "max_position_embeddings": 128}),
    "marian": _seq2seq(
        "marian",
        {
            **ENCODER_DECODER,
            "max_position_embeddings": 128,
            "decoder_start_token_id": 0,
            "pad_token_id": 0,
        },
    ),
}

WHISPER = {
    **ENCODER_DECODER,
    "num_mel_bins": 16,
    "max_source_positions": 32,  # 64 input frames
    "max_target_positions": 64,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "decoder_start_token_id": 1,
}


def _whisper_features() -> torch.Tensor:
    return torch.randn(1, 16, 64)


AUDIO_MODELS: dict[str, Callable[..., Any]] = {
    "wav2vec2": _audio("wav2vec2", AUDIO),
    "hubert": _audio("hubert", AUDIO),
    "wavlm": _audio("wavlm", {**AUDIO, "num_buckets": 16, "max_bucket_distance": 64}),
    "whisper-encoder": Make(
        "whisper",
        "WhisperModel",
        WHISPER,
        lambda: {"input_features": _whisper_features(), "decoder_input_ids": _ids(8)},
        "encoder_last_hidden_state",
    ),
    # whole: encoder and decoder, logits
    "whisper": Make(
        "whisper",
        "WhisperForConditionalGeneration",
        WHISPER,
        lambda: {"input_features": _whisper_features(), "decoder_input_ids": _ids(8)},
        "logits",
    ),
}

VISION_MODELS: dict[str, Callable[..., Any]] = {
    "vit": _image("vit", VISION),
    "deit": _image("deit", VISION),
    "beit": _image("beit", {**VISION, "use_relative_position_bias": True}),
    "dinov2": _image("dinov2", {**VISION, "mlp_ratio": 2}),
    "clip-vision": _image("clip_vision_model", VISION, auto="CLIPVisionModel"),
    "siglip-vision": _image("siglip_vision_model", VISION, auto="SiglipVisionModel"),
    "swin": _image(
        "swin",
        {
            "image_size": 64,
            "patch_size": 4,
            "embed_dim": 32,
            "depths": [1, 1],
            "num_heads": [2, 4],
            "window_size": 4,
        },
    ),
    "convnext": _image("convnext", {"hidden_sizes": [16, 32], "depths": [1, 1], "num_stages": 2}),
    "segformer": _image(
        "segformer",
        {
            "num_encoder_blocks": 2,
            "depths": [1, 1],
            "sr_ratios": [2, 1],
            "hidden_sizes": [16, 32],
            "num_attention_heads": [1, 2],
            "decoder_hidden_size": 32,
            "num_labels": 4,
        },
        auto="AutoModelForSemanticSegmentation",
    ),
    "mobilevit": _image(
        "mobilevit",
        {
            "image_size": 64,
            "hidden_sizes": [32, 48, 64],
            "neck_hidden_sizes": [8, 8, 16, 16, 24, 32, 64],
            "num_labels": 4,
        },
        auto="AutoModelForImageClassification",
    ),
    "detr": Make(
        "detr",
        "DetrForObjectDetection",
        {
            "use_timm_backbone": False,
            "use_pretrained_backbone": False,
            "backbone_config": {
                "model_type": "resnet",
                "embedding_size": 16,
                "hidden_sizes": [16, 32, 64, 128],
                "depths": [1, 1, 1, 1],
                "out_features": ["stage4"],
            },
            "d_model": 64,
            "encoder_layers": 1,
            "decoder_layers": 1,
            "encoder_attention_heads": 4,
            "decoder_attention_heads": 4,
            "encoder_ffn_dim": 128,
            "decoder_ffn_dim": 128,
            "num_queries": 10,
            "num_labels": 4,
        },
        lambda: {"pixel_values": torch.randn(1, 3, 64, 64)},
        "logits",
    ),
}

STATE_SPACE: dict[str, Callable[..., Any]] = {
    "mamba": _lm(
        "mamba",
        {"vocab_size": VOCAB, "hidden_size": 64, "num_hidden_layers": 2, "state_size": 8},
    ),
}

CASES: dict[str, Callable[..., Any]] = {
    **DECODER_LMS,
    **TEXT_ENCODERS,
    **ENCODER_DECODERS,
    **AUDIO_MODELS,
    **VISION_MODELS,
    **STATE_SPACE,
}


def from_pretrained(path: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """A user's local model folder (`tvmfork conformance --hf DIR`): the class its config
    names (`architectures`, else AutoModel), loaded with its weights, on seeded random inputs
    of its kind; the output is its logits, else its last hidden state."""
    import transformers

    config = transformers.AutoConfig.from_pretrained(path)
    names = getattr(config, "architectures", None) or []
    cls = getattr(transformers, names[0], None) if names else None
    model = (cls or transformers.AutoModel).from_pretrained(path).eval()
    feed = _inputs_for(model, config)
    out = model(**feed)
    output = "logits" if getattr(out, "logits", None) is not None else "last_hidden_state"
    return Wrapped(model, tuple(feed), output), tuple(feed.values())


def _inputs_for(model: Any, config: Any) -> dict[str, torch.Tensor]:
    """Seeded inputs for the model's main input (token ids, pixels, audio samples or mel
    features), and decoder ids for an encoder-decoder."""
    main = model.main_input_name
    text = getattr(config, "get_text_config", lambda: config)()
    if main == "input_ids":
        feed = {"input_ids": _ids(vocab=text.vocab_size)}
    elif main == "pixel_values":
        vision = getattr(config, "vision_config", config)
        size = getattr(vision, "image_size", 224)
        size = size if isinstance(size, int) else size[0]
        feed = {"pixel_values": torch.randn(1, getattr(vision, "num_channels", 3), size, size)}
    elif main == "input_values":
        feed = {"input_values": torch.randn(1, SAMPLES)}
    elif main == "input_features":
        frames = 2 * getattr(config, "max_source_positions", 1500)
        feed = {"input_features": torch.randn(1, config.num_mel_bins, frames)}
    else:
        raise ValueError(f"no inputs known for a model whose main input is {main!r}")
    if getattr(config, "is_encoder_decoder", False):
        feed["decoder_input_ids"] = _ids(8, vocab=text.vocab_size)
    return feed


# the dynamic-length cases: 1 token, the example's length, a longer prompt
SIZES = (1, SEQ, 40)
MAX_LEN = 128  # max_position_embeddings of the text configs above


def _dynamic(make: Callable[..., Any]) -> Callable[..., Any]:
    """`make`'s case with the token dimension of its input ids dynamic."""

    def dynamic() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...], dict[str, Any]]:
        model, inputs = make()
        return model, inputs, {"dims": {0: {1: "seq"}}, "max": MAX_LEN, "sizes": SIZES}

    return dynamic


DYNAMIC = {
    f"{name}-dynamic": _dynamic(make)
    for table in (DECODER_LMS, TEXT_ENCODERS)
    for name, make in table.items()
}
CASES.update(DYNAMIC)

# The generation cases: each decoder LM exported the way ahead-of-time runtimes take it
# (transformers' static-cache export, the sequence length dynamic, the KV cache a set of
# buffers the program updates), compiled once, and GENERATE_TOKENS tokens generated greedily
# (the prompt in one call, then a call per token, the cache fed back); they must be those of
# `model.generate(do_sample=False)` (the worker's `run_generate`). Weights are drawn with
# initializer_range 0.2 so that the top two logits of a step are not a near tie.
GENERATE_TOKENS = 16


def _generate(make: Make) -> Callable[..., Any]:
    def generate() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...], dict[str, Any]]:
        model, inputs = make.with_config(initializer_range=0.2)()
        return model, inputs, {"generate": GENERATE_TOKENS, "cache": MAX_LEN}

    return generate


GENERATE = {
    f"{name}-generate": _generate(make)
    for name, make in DECODER_LMS.items()
    if isinstance(make, Make)
}
CASES.update(GENERATE)

# Each decoder LM called as for scoring or perplexity, `model(input_ids, use_cache=False)`:
# no cache and no mask, so that transformers looks for packed sequences in the positions
# (`(position_ids.diff(dim=-1) != 1).cumsum(-1)`, a scan of a bool tensor)
NOCACHE = {
    f"{name}-nocache": make.calling(use_cache=False)
    for name, make in DECODER_LMS.items()
    if isinstance(make, Make)
}
CASES.update(NOCACHE)
# ... and so at a dynamic length (1 to 40 tokens): the packed-sequence check then slices by
# Python arithmetic on the length (`[..., 1 : 1 + seq]`)
NOCACHE_DYNAMIC = {f"{name}-dynamic": _dynamic(make) for name, make in NOCACHE.items()}
CASES.update(NOCACHE_DYNAMIC)
FAMILY = {
    name: family
    for family, table in (
        ("decoder LM", DECODER_LMS),
        ("text encoder", TEXT_ENCODERS),
        ("encoder-decoder", ENCODER_DECODERS),
        ("audio", AUDIO_MODELS),
        ("vision", VISION_MODELS),
        ("state space", STATE_SPACE),
        ("dynamic length", DYNAMIC),
        ("generation", GENERATE),
        ("no cache", NOCACHE),
        ("no cache, dynamic length", NOCACHE_DYNAMIC),
    )
    for name in table
}
