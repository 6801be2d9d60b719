"""Layered, typed settings; unknown keys are errors with a hint."""

from __future__ import annotations

from pathlib import Path

import pytest

from tvmfork import settings
from tvmfork.errors import UsageError

pytestmark = pytest.mark.unit


def test_layers(tmp_path: Path) -> None:
    (tmp_path / settings.LOCAL_CONFIG).write_text(
        'source = "from-file"\ncache_dir = "/c"\n[wheel]\nvariant = "cuda"\n'
    )
    s = settings.load(
        tmp_path, environ={"TVMFORK_SOURCE": "from-env"}, overrides={"wheel": {"variant": "cpu"}}
    )
    assert s.source == "from-env"
    assert s.cache_dir == Path("/c")
    assert s.wheel.variant == "cpu"
    assert s.out_dir == tmp_path / "out"


def test_unknown_key_in_file_has_hint(tmp_path: Path) -> None:
    (tmp_path / settings.LOCAL_CONFIG).write_text('[wheel]\nvarient = "cuda"\n')
    with pytest.raises(UsageError, match=r"did you mean 'wheel\.variant'"):
        settings.load(tmp_path, environ={})


def test_unknown_env_key(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="did you mean 'checkout_dir'"):
        settings.load(tmp_path, environ={"TVMFORK_CHECKOUT_DIRR": "x"})


def test_bad_value(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"wheel\.mode must be one of"):
        settings.load(tmp_path, environ={"TVMFORK_WHEEL__MODE": "fast"})
    with pytest.raises(UsageError, match="true or false"):
        settings.load(tmp_path, environ={"TVMFORK_WHEEL__PYTHON_ONLY": "maybe"})


def test_overrides_from_a_command_line() -> None:
    """settings.overrides_from: the options set, nested as in tvmfork.local.toml."""
    import argparse

    args = argparse.Namespace(
        out_dir="o", source=None, submodule=["3rdparty/tvm-ffi/=/m/ffi"], mode="overlay",
        python_only=True, jobs=None, ccache=False,
    )  # fmt: skip
    assert settings.overrides_from(args) == {
        "out_dir": "o",
        "submodules": {"3rdparty/tvm-ffi": "/m/ffi"},
        "wheel": {"mode": "overlay", "python_only": True},
        "build": {"ccache": False},
    }
    with pytest.raises(UsageError, match="PATH=SOURCE"):
        settings.overrides_from(argparse.Namespace(submodule=["nosep"]))
