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


def test_overrides_from_a_command_line(tmp_path: Path) -> None:
    """settings.overrides_from: the options of the real parser that are set, nested as in
    tvmfork.local.toml; they land in the settings."""
    from tvmfork.args import parser

    args = parser().parse_args(
        ["wheel", "--out", "o", "--mode", "overlay", "--python-only", "--no-ccache",
         "--checkout", "/t/tvm", "--jobs", "3", "--stock-wheel", "/w/s.whl"]
    )  # fmt: skip
    assert settings.overrides_from(args) == {
        "out_dir": "o",
        "checkout_dir": "/t/tvm",
        "wheel": {"mode": "overlay", "python_only": True, "stock_wheel": "/w/s.whl"},
        "build": {"ccache": False, "jobs": "3"},
    }
    s = settings.load(tmp_path, environ={}, overrides=settings.overrides_from(args))
    assert (s.wheel.mode, s.wheel.python_only, s.build.ccache) == ("overlay", True, False)
    assert s.wheel.stock_wheel == Path("/w/s.whl") and s.checkout_dir == Path("/t/tvm")
    sub = parser().parse_args(["checkout", "--submodule", "3rdparty/tvm-ffi/=/m/ffi"])
    assert settings.overrides_from(sub) == {"submodules": {"3rdparty/tvm-ffi": "/m/ffi"}}
    with pytest.raises(UsageError, match="PATH=SOURCE"):
        settings.overrides_from(parser().parse_args(["checkout", "--submodule", "nosep"]))
    # conformance's --jobs is its own (workers), not build.jobs
    conf = parser().parse_args(["conformance", "--jobs", "2"])
    assert settings.overrides_from(conf) == {}


def test_every_setting_option_names_a_setting(tmp_path: Path) -> None:
    """Each option args.py declares as a setting names a key the settings have, so an option
    renamed there cannot fall out of the settings silently; a key that is not one is an
    error when the settings load."""
    import argparse

    from tvmfork.args import parser

    def actions(p: argparse.ArgumentParser) -> list[argparse.Action]:
        out = list(p._actions)
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                out += [x for sp in a.choices.values() for x in actions(sp)]
        return out

    keys = {
        a.dest[len(settings.CLI_PREFIX) :]
        for a in actions(parser())
        if a.dest.startswith(settings.CLI_PREFIX)
    }
    assert {"wheel.mode", "build.jobs", "checkout_dir", "submodules"} <= keys
    for key in keys:
        *tables, name = key.split(".")
        node: object = settings.Settings()
        for t in tables:
            node = getattr(node, t)
        assert hasattr(node, name), key
    bad = argparse.Namespace(**{settings.cli_dest("wheel.moed"): "overlay"})
    with pytest.raises(UsageError, match=r"did you mean 'wheel\.mode'"):
        settings.load(tmp_path, environ={}, overrides=settings.overrides_from(bad))


def test_values_convert_by_their_annotated_types(tmp_path: Path) -> None:
    s = settings.load(
        tmp_path,
        environ={"TVMFORK_WHEEL__STOCK_WHEEL": "~/w.whl", "TVMFORK_BUILD__CCACHE": "off"},
    )
    assert s.wheel.stock_wheel == Path("~/w.whl").expanduser() and s.build.ccache is False
    (tmp_path / settings.LOCAL_CONFIG).write_text("[submodules]\n'3rdparty/x' = '/m/x'\n")
    assert settings.load(tmp_path, environ={}).submodules == {"3rdparty/x": "/m/x"}
    with pytest.raises(UsageError, match="must be a string"):
        settings.load(tmp_path, environ={}, overrides={"source": 3})
