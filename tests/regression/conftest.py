"""Regression tests run against the TVM of the interpreter running them (stock or fork).

`tvmfork verify` runs each module twice, in a stock venv and in a fork venv. Run directly,
they test whatever TVM this environment has; without TVM they are skipped, saying so.
"""

import pytest

collect_ignore_glob: list[str] = []

try:
    import tvm  # noqa: F401
except ImportError:
    collect_ignore_glob.append("test_*.py")

    def pytest_collection_modifyitems(config, items):  # pragma: no cover
        pass


def pytest_report_header(config):
    try:
        import tvm

        return f"TVM under test: {tvm.__version__} at {tvm.__file__}"
    except ImportError:
        return "TVM under test: none installed (regression modules not collected)"


def pytest_itemcollected(item):
    """Each test here is marked `regression` as it is collected, before `-m` selects: `pytest
    -m regression` selects these modules (a marker added in a fixture comes too late)."""
    item.add_marker(pytest.mark.regression)


@pytest.fixture(autouse=True)
def _seeded():
    """Every test draws the same random inputs on every run and on both sides (stock, fork)."""
    import random

    import numpy as np

    random.seed(0)
    np.random.seed(0)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(0)
