"""The `transformers-registry` conformance suite: every model type of transformers' Auto
registries, called the ways users call it, in float32 and bfloat16 (and float16 for a subset).

Unlike `transformers_models.py` (a hand-picked table with a config written for each), the
cases here come from the registries of the transformers installed in the venv under test:
each model type of `AutoModelForCausalLM`, `AutoModelForMaskedLM`, `AutoModelForSeq2SeqLM`
and `AutoModelForImageClassification`, built from its default config made small generically
(`shrink`: the size fields set small, per-layer lists cut to the layers kept, token ids kept
inside the vocabulary), random weights (seeded by the worker), nothing downloaded.

Case names are `TYPE.KIND-CALL.DTYPE` (KIND: lm, mlm, s2s, image):
- causal LMs: `default` (`model(ids)`, transformers' own cache), `nocache`
  (`model(ids, use_cache=False)`: scoring, perplexity) and `padded` (batch 2, the second row
  right-padded, with its attention mask), each in float32 and bfloat16;
- masked LMs and seq2seq LMs: `padded` (seq2seq: with decoder ids), float32 and bfloat16;
- image classifiers: `default` (batch 2 of pixels), float32 and bfloat16;
- float16 (`FLOAT16_CALLS`): causal LMs' `nocache` and masked LMs' `padded`, the calls users
  score and fill masks with, where a float16 checkpoint is loaded as it is stored.

A type whose default config cannot be built small, or whose model torch.export refuses, is
an error at its stage (`build` in the model's constructor, `export`), with the reason.
Like the other suite files, the worker imports this file by path inside the venv under test.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch

SEQ = 12  # tokens of the example input
VOCAB = 512
IMAGE = 32  # pixels of the example images' side
BATCH = 2
PAD = 4  # padding tokens at the end of the second row of a padded batch
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# the calls that are also run in float16 (every call runs in float32 and bfloat16)
FLOAT16_CALLS = {("AutoModelForCausalLM", "nocache"), ("AutoModelForMaskedLM", "padded")}

# config fields by meaning, and the small value each takes
WIDTH = 64
SMALL = {
    # widths
    **dict.fromkeys(
        (
            "hidden_size",
            "d_model",
            "n_embd",
            "dim",
            "embed_dim",
            "model_dim",
            "word_embed_proj_dim",
            "embedding_size",
            "projection_dim",
            "text_embed_dim",
            "cross_attention_hidden_size",  # T5Gemma's decoder: the encoder's width
        ),
        WIDTH,
    ),
    # feed-forward widths
    **dict.fromkeys(
        (
            "intermediate_size",
            "ffn_dim",
            "d_ff",
            "n_inner",
            "hidden_dim",
            "encoder_ffn_dim",
            "decoder_ffn_dim",
            "ffn_hidden_size",
            "mlp_dim",
        ),
        2 * WIDTH,
    ),
    **dict.fromkeys(
        (
            "moe_intermediate_size",
            "shared_expert_intermediate_size",
            "expert_intermediate_size",
            "moe_ffn_hidden_size",
        ),
        WIDTH,
    ),
    # layers
    **dict.fromkeys(
        (
            "num_hidden_layers",
            "n_layer",
            "n_layers",
            "num_layers",
            "encoder_layers",
            "decoder_layers",
            "num_decoder_layers",
            "num_encoder_layers",
        ),
        2,
    ),
    # heads
    **dict.fromkeys(
        (
            "num_attention_heads",
            "n_head",
            "n_heads",
            "num_heads",
            "encoder_attention_heads",
            "decoder_attention_heads",
        ),
        4,
    ),
    **dict.fromkeys(
        ("num_key_value_heads", "n_head_kv", "num_kv_heads", "multi_query_group_num"), 2
    ),
    **dict.fromkeys(("head_dim", "d_kv", "attention_head_dim", "kv_channels"), 16),
    # multi-head latent attention (DeepSeek-V2/V3 style), its indexer, linear attention
    **dict.fromkeys(("qk_rope_head_dim", "qk_nope_head_dim", "rotary_dim", "index_n_heads"), 8),
    **dict.fromkeys(("v_head_dim", "index_head_dim", "linear_head_dim"), 16),
    **dict.fromkeys(("kv_lora_rank", "q_lora_rank", "adapter_rank"), 32),
    "linear_num_heads": 4,
    # state-space layers
    **dict.fromkeys(("mamba_d_head", "mamba_headdim"), 16),
    **dict.fromkeys(("mamba_d_state", "state_size", "time_step_rank"), 16),
    **dict.fromkeys(("mamba_n_groups", "n_groups", "mamba_ngroups"), 1),
    "embedding_dim": WIDTH,
    # experts
    **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"), 4),
    **dict.fromkeys(("num_experts_per_tok", "moe_topk", "top_k", "num_selected_experts"), 2),
    **dict.fromkeys(("n_group", "topk_group"), 1),
    # vocabulary and positions
    "vocab_size": VOCAB,
    **dict.fromkeys(
        ("max_position_embeddings", "n_positions", "max_seq_len", "n_ctx", "seq_length"), 128
    ),
    # images (and Swin's windows, which must fit the last stage's map of a small image)
    "image_size": IMAGE,
    "window_size": 2,
    # hybrid stacks: an attention (or expert) layer every `period` layers from `offset`, so
    # that the layers kept hold one (Jamba, Zamba)
    **dict.fromkeys(("attn_layer_period", "expert_layer_period"), 2),
    **dict.fromkeys(("attn_layer_offset", "expert_layer_offset"), 1),
}
# widths a model derives from its hidden size (RWKV's attention, as wide; Zamba2's, twice as
# wide: it attends over the hidden state beside the embeddings; BLT's global width, its local
# one times `cross_attn_k`): kept at the default's multiple
DERIVED_WIDTHS = ("attention_hidden_size", "hidden_size_global")
# fields listing each stage's heads (Swin): each made the largest power of two at most
# itself, which divides every stage's width
HEAD_LISTS = ("num_heads", "num_attention_heads")
# per-layer fields made of layer indices (keep those of the kept layers)
LAYER_INDEX_LISTS = ("mlp_only_layers", "full_attn_idxs", "attn_layer_indices")


def _get(config: Any, key: str) -> Any:
    """`config.key` (aliases of `attribute_map` included), or None; the stored value where
    the config refuses to give one field for every layer (Gemma 4, dots3: a per-layer
    attribute)."""
    try:
        return getattr(config, key, None)
    except RuntimeError:  # transformers' AmbiguousGlobalPerLayerAttributeError
        return vars(config).get(key)


def _layers(config: Any) -> int | None:
    for key in ("num_hidden_layers", "n_layer", "n_layers", "num_layers"):
        value = _get(config, key)
        if isinstance(value, int):
            return value
    return None


def _put(config: Any, key: str, value: Any) -> None:
    """`config.key = value`, unless the config refuses to set the field (Funnel's and
    ProphetNet's layer counts are derived from other fields: those are set instead; NeMo
    SpeechLM's audio width is a property)."""
    try:
        setattr(config, key, value)
    except (NotImplementedError, AttributeError):  # derived, or a read-only property
        pass


def _kept(values: list[Any], count: int) -> list[Any]:
    """A per-layer list cut to `count` layers, keeping the kinds it mixes: the first layer,
    then the first of another kind (a full-attention layer beside sliding ones)."""
    kept = [values[0]]
    other = next((v for v in values[1:] if v != values[0]), None)
    while len(kept) < count:
        kept.append(other if other is not None and len(kept) == 1 else values[len(kept)])
    return kept


# decoders of audio codes that take a row of ids per codebook of each sequence
CODEBOOK_ROWS = {"musicgen_decoder", "musicgen_melody_decoder"}

# what a type needs beyond `shrink`, by the `model_type` of the config or sub-config it is set
# on (after shrinking it); a dotted key sets a field of a sub-config that has no type of its own
NEEDS: dict[str, dict[str, Any]] = {
    # its shared transformer is tied across its hybrid layers (it needs two of them); its
    # attention twice as wide as the model (DERIVED_WIDTHS), a head a quarter of that
    "zamba": {
        "num_hidden_layers": 4,
        "layers_block_type": ["linear_attention", "hybrid"] * 2,
        "attention_head_dim": 2 * WIDTH // 4,
        "mamba_dt_rank": 8,
    },
    # MobileViTv2 unfolds its last stage's map (1/32 of the image) into 2x2 patches
    "mobilevitv2": {"image_size": 2 * IMAGE},
    # ESM's default config leaves the vocabulary unset (ESM-2's 33 tokens, its mask the last)
    "esm": {"vocab_size": 33, "mask_token_id": 32, "pad_token_id": 1},
    # ESM-C normalizes keys over the model's width: as many key/value heads as heads
    "esmc": {"num_key_value_heads": 4},
    # BLT: the global transformer as wide as the local layers times `cross_attn_k` (2), its
    # rotary embedding as wide as a head (the width over the heads), and hashed byte-group
    # embeddings of a small vocabulary (the default's has 500002 rows)
    "blt_global_transformer": {"hidden_size": 2 * WIDTH, "head_dim": 2 * WIDTH // 4},
    "blt": {"encoder_hash_byte_group_vocab": VOCAB},
    # the default configs leave these unset (transformers' defaults fail in the model's init)
    # DBRX reads its rotary base from the attention config and clamps q, k, v unconditionally
    "dbrx": {"attn_config.rope_theta": 10000.0, "attn_config.clip_qkv": 8.0},
    "dots1": {"n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1},
    # LFM2-MoE: a convolution layer, then attention; its second layer an expert layer
    "lfm2_moe": {"layer_types": ["conv", "full_attention"], "num_dense_layers": 1},
    # hybrid stacks whose default keeps no attention layer among the two kept: one of each
    "bamba": {"attn_layer_indices": [1]},
    "granitemoehybrid": {"layer_types": ["linear_attention", "full_attention"]},
    "recurrent_gemma": {"block_types": ["recurrent", "attention"]},  # its default cycles 3
    # xLSTM rounds its query/key width up to a multiple of 64 where its cache does not: the
    # query/key width (width x factor) made a multiple of 64; its blocks, as many as layers
    "xlstm": {"qk_dim_factor": 1.0, "num_blocks": 2},
    # HRM text runs its two stacks in cycles, each invocation with a cache slot of its own
    # (`num_hidden_layers` counts the slots, `num_layers_per_stack` the layers): one layer per
    # stack and one cycle of each, two slots
    "hrm_text": {"num_layers_per_stack": 1, "H_cycles": 1, "L_cycles": 1, "num_hidden_layers": 2},
    # Gemma 3n: its last 15 layers reuse earlier layers' keys and values (none of the two kept)
    "gemma3n_text": {"num_kv_shared_layers": 0},
    # Cohere Compass reads rotary parameters per layer type; its default config has none
    "cohere_compass_text": {
        "rope_parameters": {
            kind: {"rope_type": "default", "rope_theta": 10000.0}
            for kind in ("full_attention", "sliding_attention")
        }
    },
    # EfficientNet's last convolution is 1280 channels times its width coefficient (2560)
    "efficientnet": {"hidden_dim": 2560},
    # Qwen4-exp's attention indexer (its default leaves the sizes unset)
    "qwen4_exp_text": {
        "indexer_n_heads": 2,
        "indexer_kv_heads": 1,
        "indexer_head_dim": 16,
        "indexer_budget": 8,
        "indexer_compress_ratio": 4,
    },
}


def _needs(config: Any) -> None:
    """The fields NEEDS sets on a config of this model type."""
    for key, value in NEEDS.get(getattr(config, "model_type", ""), {}).items():
        *path, field = key.split(".")
        target = config
        for part in path:
            target = getattr(target, part)
        setattr(target, field, value)


def shrink(config: Any) -> Any:
    """`config` (a transformers PretrainedConfig, default values) made small: every field in
    SMALL that it has set to its small value (never larger than it was), lists with one entry
    per layer cut to the layers kept, token ids outside the smaller vocabulary brought inside
    it, the same done to each sub-config."""
    import transformers

    before = _layers(config)
    width = _get(config, "hidden_size")
    ratios = {  # widths derived from the model's: the same multiple of the small one
        key: value / width
        for key in DERIVED_WIDTHS
        if isinstance(width, int) and width and isinstance(value := _get(config, key), int)
    }
    for key, small in SMALL.items():
        value = _get(config, key)
        if isinstance(value, int) and not isinstance(value, bool) and value > small:
            _put(config, key, small)
    after = _layers(config)
    width = _get(config, "hidden_size")
    for key, ratio in ratios.items():
        _put(config, key, max(1, round(ratio * width)))
    for key, value in list(vars(config).items()):
        if key in HEAD_LISTS and isinstance(value, (list, tuple)) and value:
            value = type(value)(1 << (max(int(h), 1).bit_length() - 1) for h in value)
            setattr(config, key, value)
        if isinstance(value, transformers.PretrainedConfig):
            shrink(value)
        elif isinstance(value, dict) and "model_type" in value:
            sub = transformers.AutoConfig.for_model(**value)
            setattr(config, key, shrink(sub))
        elif (
            isinstance(value, (list, tuple))
            and before
            and after
            and len(value) == before
            and before > after
        ):
            setattr(config, key, type(value)(_kept(list(value), after)))
        elif key in LAYER_INDEX_LISTS and isinstance(value, (list, tuple)) and after:
            setattr(config, key, type(value)(i for i in value if i < after))
        elif key.endswith("_token_id") and isinstance(value, int) and value >= VOCAB:
            setattr(config, key, VOCAB - 1 - (hash(key) % 8))
        elif key == "block_sizes" and isinstance(value, (list, tuple)):  # Funnel's layers
            setattr(config, key, type(value)(1 for _ in value))
    _consistent(config)
    _needs(config)
    return config


def _set(config: Any, key: str, value: Any) -> None:
    if key in vars(config):
        setattr(config, key, value)


def _consistent(config: Any) -> None:
    """The fields that derive from others made to agree with the small values: key/value
    heads dividing the heads, a head width where the default leaves it to be derived, the
    latent attention's query-key width, experts chosen per token where the default leaves it
    unset, state-space heads spanning the expanded width."""
    c = vars(config)
    heads, kv = c.get("num_attention_heads"), c.get("num_key_value_heads")
    latent = "kv_lora_rank" in c  # latent attention: every head its own keys and values
    if isinstance(heads, int) and "num_key_value_heads" in c and (not kv or heads % kv or latent):
        config.num_key_value_heads = heads
    if c.get("head_dim", 0) is None and isinstance(heads, int):
        config.head_dim = c.get("hidden_size", WIDTH) // heads
    if isinstance(c.get("qk_rope_head_dim"), int):
        _set(config, "qk_head_dim", c["qk_rope_head_dim"] + c.get("qk_nope_head_dim", 0))
        _set(config, "head_dim", c["qk_rope_head_dim"])
    experts = [c[k] for k in ("n_routed_experts", "num_experts") if isinstance(c.get(k), int)]
    if experts and "num_experts_per_tok" in c and c["num_experts_per_tok"] is None:
        config.num_experts_per_tok = min(SMALL["num_experts_per_tok"], experts[0])  # DeepSeek-V2
    hidden = c.get("hidden_size", WIDTH)
    if isinstance(c.get("axial_pos_embds_dim"), (list, tuple)):  # Reformer: they sum to it
        config.axial_pos_embds_dim = (hidden // 2, hidden - hidden // 2)
    for n, d, e in (
        ("num_heads", "head_dim", "expand"),
        ("mamba_n_heads", "mamba_d_head", "mamba_expand"),
        ("n_mamba_heads", "mamba_headdim", "mamba_expand"),
    ):
        if all(isinstance(c.get(k), (int, float)) for k in (n, d, e)):
            setattr(config, n, int(c[e] * hidden) // c[d])
    if isinstance(c.get("mamba_d_ssm"), int):  # Falcon-H1: the state-space heads' width
        config.mamba_d_ssm = c["mamba_n_heads"] * c["mamba_d_head"]
    if isinstance(c.get("hybrid_layer_ids"), list) and isinstance(c.get("layers_block_type"), list):
        kinds = c["layers_block_type"]  # Zamba2: the shared blocks' layers, as its init derives
        config.hybrid_layer_ids = [i for i, kind in enumerate(kinds) if kind == "hybrid"]


def _sub_config(config: Any, config_class: type) -> Any:
    """The sub-config of a composite `config` that the model class takes: its text model's
    (Llama 4, Qwen3.5), or the one sub-config of that class (MusicGen's decoder, where the
    text config is ambiguous); `config` itself where none is."""
    import transformers

    try:
        text = config.get_text_config()
    except ValueError:
        text = None
    if isinstance(text, config_class):
        return text
    subs = [v for v in vars(config).values() if isinstance(v, transformers.PretrainedConfig)]
    return next((v for v in subs if isinstance(v, config_class)), config)


def _text(config: Any) -> Any:
    get = getattr(config, "get_text_config", None)
    return get() if get else config


class Called(torch.nn.Module):  # type: ignore[misc]
    """The model called with its named inputs and fixed keyword arguments, returning its
    logits (PP-LCNet's classifier returns its class scores as `last_hidden_state`)."""

    def __init__(self, model: torch.nn.Module, names: tuple[str, ...], call: dict[str, Any]):
        """`names`: the keyword of each positional input, in order (set once they are drawn)."""
        super().__init__()
        self.model = model
        self.names = names
        self.call = call

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        out = self.model(**dict(zip(self.names, args, strict=True)), **self.call)
        logits: torch.Tensor = getattr(out, "logits", None)
        return out.last_hidden_state if logits is None else logits


def _ids(config: Any, batch: int, n: int) -> torch.Tensor:
    if getattr(config, "model_type", "") in CODEBOOK_ROWS:
        batch *= config.num_codebooks
    vocab = min(_text(config).vocab_size or VOCAB, VOCAB)
    return torch.randint(0, vocab, (batch, n))


def _padded(config: Any) -> dict[str, torch.Tensor]:
    """A batch of two rows of token ids, the second right-padded (PAD pad tokens, masked)."""
    ids = _ids(config, BATCH, SEQ)
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    mask[1, SEQ - PAD :] = 0
    pad = getattr(_text(config), "pad_token_id", None)
    ids[1, SEQ - PAD :] = pad if isinstance(pad, int) and 0 <= pad < VOCAB else 0
    return {"input_ids": ids, "attention_mask": mask}


def _cluster_ids(config: Any, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """An image as a sequence of color-cluster ids (ImageGPT)."""
    return {"input_ids": _ids(config, BATCH, SEQ)}


def _patches(config: Any, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """An image as its processor gives SigLIP 2: flattened patches on a grid of its own size
    (here square), with the grid's shape and a mask of the patches that are image."""
    vision = config.vision_config
    side = IMAGE // vision.patch_size
    patch = vision.num_channels * vision.patch_size**2
    return {
        "pixel_values": torch.randn(BATCH, side * side, patch, dtype=dtype),
        "pixel_attention_mask": torch.ones(BATCH, side * side, dtype=torch.int64),
        "spatial_shapes": torch.tensor([[side, side]] * BATCH),
    }


# image classifiers whose input is not a batch of pixels: the type's own feed
IMAGE_FEEDS: dict[str, Callable[[Any, torch.dtype], dict[str, torch.Tensor]]] = {
    "imagegpt": _cluster_ids,
    "siglip2": _patches,
}


def _drawn(model: torch.nn.Module) -> None:
    """Each weight matrix that a model's initializer left constant (a MoE router's gate that
    starts at zero) drawn at random: a trained model's router has no such ties, and with one
    every expert scores the same, top-k's choice among equals decides the output, and two
    correct implementations disagree."""
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2 and p.numel() > 1 and bool((p == p.flatten()[0]).all()):
                p.normal_(0.0, 0.02)


class Case:
    """One registry case: `auto` class, model type, how it is called, in which dtype. (A plain
    class: the worker imports this file by path, where a dataclass cannot be made.)"""

    def __init__(self, auto: str, model_type: str, call: str, dtype: str) -> None:
        self.auto, self.model_type, self.call, self.dtype = auto, model_type, call, dtype

    def config(self) -> Any:
        import transformers

        return shrink(transformers.AutoConfig.for_model(self.model_type))

    def __call__(self) -> tuple[Any, ...]:
        """(model, inputs), and for a half-precision case {"float32": the model in float32}
        (torch_route.run_torch's options)."""
        import transformers

        config = self.config()
        # the registry's class (its first, where it names several: the Auto class's
        # from_config fails on those when the config names no architecture)
        names = registry_classes()[self.auto][self.model_type]
        cls = getattr(transformers, names if isinstance(names, str) else names[0])
        config_class = getattr(cls, "config_class", None)
        if config_class is not None and not isinstance(config, config_class):
            config = _sub_config(config, config_class)
        if self.auto == "AutoModelForCausalLM" and "is_decoder" in vars(config):
            config.is_decoder = True  # an encoder's LM head as a decoder (Reformer requires it)
        model = cls._from_config(config).eval()
        if hasattr(model, "set_default_language"):  # X-MOD: one adapter per language
            model.set_default_language(next(iter(config.languages)))
        _drawn(model)
        model = model.to(DTYPES[self.dtype])
        call = {"use_cache": False} if self.call == "nocache" else {}
        called = Called(model, (), call)
        if self.dtype == "float32":
            feed = self.feed(config)
            called.names = tuple(feed)
            return called, tuple(feed.values())
        # a half-precision model: its float32 computation (the same rounded weights) is the
        # exact result its outputs are also held to, and tells near ties among top-k choices
        wide = Called(copy.deepcopy(model).float(), (), call)
        for _ in range(DRAWS):
            feed = self.feed(config)
            called.names = wide.names = tuple(feed)
            inputs = tuple(feed.values())
            if not near_tie(called, wide, inputs):
                break
        return called, inputs, {"float32": wide}

    def feed(self, config: Any) -> dict[str, torch.Tensor]:
        """The model's inputs, drawn from the seeded generator."""
        if self.call == "default" and self.model_type in IMAGE_FEEDS:
            return IMAGE_FEEDS[self.model_type](config, DTYPES[self.dtype])
        if self.call == "default" and self.auto == "AutoModelForImageClassification":
            vision = getattr(config, "vision_config", config)
            channels = getattr(vision, "num_channels", 3)
            size = getattr(vision, "image_size", IMAGE)
            size = size if isinstance(size, int) else size[0]
            pixels = torch.randn(BATCH, channels, size, size, dtype=DTYPES[self.dtype])
            return {"pixel_values": pixels}
        if self.call == "padded":
            feed = _padded(config)
            if self.auto == "AutoModelForSeq2SeqLM":
                feed["decoder_input_ids"] = _ids(config, BATCH, SEQ // 2)
            return feed
        return {"input_ids": _ids(config, 1, SEQ)}


# Inputs drawn at most this many times to find some whose top-k choices are not near ties
DRAWS = 8


class _TopKInputs(torch.overrides.TorchFunctionMode):  # type: ignore[misc]
    """Records the values and k of every top-k a model takes (MoE routers)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[torch.Tensor, int]] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func in (torch.topk, torch.Tensor.topk):
            k = args[1] if len(args) > 1 else kwargs["k"]
            self.seen.append((args[0].detach().double(), int(k)))
        return func(*args, **kwargs)


def widened(inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """Floating-point inputs in float32 (for a model's float32 copy)."""
    return tuple(x.float() if x.is_floating_point() else x for x in inputs)


def _topk_inputs(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Any:
    with torch.no_grad(), _TopKInputs() as mode:
        model(*inputs)
    return mode.seen


def near_tie(model: torch.nn.Module, wide: torch.nn.Module, inputs: Any) -> bool:
    """Whether a half-precision model's top-k choices (an MoE router's experts) on `inputs`
    are near ties: the k-th and (k+1)-th scores, as the same model in float32 computes them,
    closer than twice the largest error of the half-precision scores. There any correct
    half-precision run may choose either expert and the outputs of that token then differ
    by the experts' difference, not by rounding (PyTorch promises no order among ties)."""
    half, full = _topk_inputs(model, inputs), _topk_inputs(wide, widened(inputs))
    for (h, k), (f, _) in zip(half, full, strict=False):
        if h.shape != f.shape or f.shape[-1] <= k:
            continue
        err = float((h - f).abs().max())
        top = f.topk(k + 1, dim=-1).values
        if bool(((top[..., k - 1] - top[..., k]) <= 2 * err).any()):
            return True
    return False


CALLS = {
    "AutoModelForCausalLM": ("default", "nocache", "padded"),
    "AutoModelForMaskedLM": ("padded",),
    "AutoModelForSeq2SeqLM": ("padded",),
    "AutoModelForImageClassification": ("default",),
}
# the case name's kind (a model type can be in several registries)
KINDS = {
    "AutoModelForCausalLM": "lm",
    "AutoModelForMaskedLM": "mlm",
    "AutoModelForSeq2SeqLM": "s2s",
    "AutoModelForImageClassification": "image",
}
FAMILIES = {
    "AutoModelForCausalLM": "causal LM",
    "AutoModelForMaskedLM": "masked LM",
    "AutoModelForSeq2SeqLM": "seq2seq LM",
    "AutoModelForImageClassification": "image classification",
}


def registry_classes() -> dict[str, Any]:
    """Each Auto class's mapping: model type -> class name (or names)."""
    from transformers.models.auto import modeling_auto as auto

    return {
        "AutoModelForCausalLM": auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        "AutoModelForMaskedLM": auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES,
        "AutoModelForSeq2SeqLM": auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
        "AutoModelForImageClassification": auto.MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES,
    }


def registry() -> dict[str, list[str]]:
    """The model types of each Auto class (transformers' own mapping names)."""
    return {name: sorted(mapping) for name, mapping in registry_classes().items()}


def _cases() -> tuple[dict[str, Callable[..., Any]], dict[str, str]]:
    cases: dict[str, Callable[..., Any]] = {}
    family: dict[str, str] = {}
    for auto, types in registry().items():
        for model_type in types:
            for call in CALLS[auto]:
                for dtype in DTYPES:
                    if dtype == "float16" and (auto, call) not in FLOAT16_CALLS:
                        continue
                    name = f"{model_type}.{KINDS[auto]}-{call}.{dtype}"
                    cases[name] = Case(auto, model_type, call, dtype)
                    family[name] = FAMILIES[auto]
    return cases, family


CASES, FAMILY = _cases()
