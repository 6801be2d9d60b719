"""What tvmfork and the scripts (in the TVM venvs) share about the suites: the torch-module
suites' files by suite name, and the `-k` rule that picks cases by name."""

from __future__ import annotations

import fnmatch
from pathlib import Path

CONFORMANCE = Path(__file__).resolve().parents[1]
# the torch-module suites: name -> the file whose CASES the worker imports (beside worker.py)
TORCH_MODULES = {
    "torchvision": CONFORMANCE / "torchvision_models.py",
    "transformers": CONFORMANCE / "transformers_models.py",
    "transformers-bench": CONFORMANCE / "transformers_bench.py",
    "transformers-registry": CONFORMANCE / "transformers_registry.py",
}


def globs(values: list[str]) -> list[str]:
    """The globs of `-k` values: each value a glob or a comma-separated list of them."""
    return [g.strip() for v in values for g in v.split(",") if g.strip()]


def pick(names: list[str], *groups: list[str]) -> list[str]:
    """The names that match a pattern of every (non-empty) group."""
    return [n for n in names if all(any(fnmatch.fnmatchcase(n, p) for p in g) for g in groups if g)]
