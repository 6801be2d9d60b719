"""Comparing upstream test outcomes between stock and fork."""

from __future__ import annotations

import pytest

from tvmfork import series as seriesmod
from tvmfork import upstream_tests

from .conftest import PY_FILE, Fork

pytestmark = pytest.mark.unit


def test_compare_blames_only_real_regressions() -> None:
    stock = {"a": "passed", "b": "failed", "c": "failed", "d": "passed", "e": "passed"}
    fork = {"a": "passed", "b": "passed", "c": "failed", "d": "failed"}
    c = upstream_tests.compare(stock, fork)
    assert c.fixed == ["b"]
    assert c.broken_on_both == ["c"]
    assert c.regressions == ["d", "e (not run on the fork)"]
    assert "REGRESSIONS (pass on stock, fail on the fork): 2" in upstream_tests.summary(c)


def test_compare_new_tests_and_files_stock_cannot_collect() -> None:
    """A test of a new API: stock cannot import its file (a module-level error entry)."""
    stock = {"::tests.test_new": "failed", "tests.test_old::t": "passed"}
    fork = {
        "tests.test_new::t1": "passed",
        "tests.test_new::t2": "failed",
        "tests.test_old::t": "passed",
    }
    c = upstream_tests.compare(stock, fork)
    assert c.regressions == []  # the stock-side collection error is not a fork test
    assert c.fixed == ["tests.test_new::t1"]
    assert c.new_failing == ["tests.test_new::t2"]
    assert "FAILING, new with the series (not run on stock): 1" in upstream_tests.summary(c)


def test_test_files_come_from_the_patches(fork: Fork) -> None:
    fork.commit_change(PY_FILE, "return x + 3", "return x - 3", "[Relax] Fix op3")
    fork.commit_change("tests/python/test_op.py", "", "def test_more():\n    pass\n", "[T] More")
    assert fork.run("export") == 0
    series = seriesmod.load(fork.root / "patches")
    assert upstream_tests.test_files(series) == ["tests/python/test_op.py"]
    assert upstream_tests.test_files(series, ["fix-op3"]) == []
