"""Writes a small HuggingFace model folder (config.json + model.safetensors, random weights) as
`save_pretrained` does: run with a test venv's python, `python make_hf.py OUT_DIR`."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python/tvmfork/conformance"))
import torchvision_shim  # transformers imports torchvision

torchvision_shim.load()
import transformers  # noqa: E402

torch.manual_seed(0)
config = transformers.LlamaConfig(
    vocab_size=256,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=1,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
)
transformers.LlamaForCausalLM(config).save_pretrained(sys.argv[1])
