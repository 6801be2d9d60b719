"""Typed settings, layered: defaults < tvmfork.local.toml < TVMFORK_* environment < CLI.

`tvmfork.local.toml` sits at the repository root and is ignored by git: it is where a
machine's paths (a TVM mirror, a cache) belong, never in a committed file. Unknown keys are
errors with a "did you mean" hint, in the file and in the environment alike.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

from tvmfork.errors import UsageError

LOCAL_CONFIG = "tvmfork.local.toml"
ENV_PREFIX = "TVMFORK_"
MODES = ("auto", "overlay", "source")
VARIANTS = ("cpu", "cuda")


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tvmfork"


@dataclass
class WheelSettings:
    mode: str = "auto"
    """How to build: `overlay` (stock wheel + Python patches), `source`, or `auto`."""
    variant: str = "cpu"
    """Build variant (`cpu` or `cuda`); an overlay wheel is the stock wheel's variant."""
    python_only: bool = False
    """Overlay a series that has native patches, leaving those out (said in the manifest)."""
    stock_wheel: Path | None = None
    """A local copy of the stock wheel to use instead of downloading it (offline use)."""
    platform: str = ""
    """Overlay wheels: the stock wheel's platform to overlay (`linux_aarch64`, ...), `all` for
    each one the lock names, or empty for this machine's."""


@dataclass
class BuildSettings:
    jobs: str = ""
    """Parallel compile jobs (default: the number of CPUs)."""
    ccache: bool = True
    """Compile through ccache when it is installed (cache in `cache_dir/ccache`)."""
    llvm_config: str = ""
    """The llvm-config to build with (default: the newest >= 15 found)."""
    cuda_home: str = ""
    """The CUDA toolkit root for the cuda variant (default: found from nvcc)."""
    cuda_architectures: str = ""
    """CMAKE_CUDA_ARCHITECTURES of the CUDA sidecar (default: the variant's list)."""
    cuda_driver_lib: str = ""
    """libcuda.so (driver or stub) to link the sidecar against (default: the toolkit's stub,
    else a stub generated from cuda.h; it is never shipped)."""
    build_dir: Path | None = None
    """The CMake build folder (default: `<checkout>/build/tvmfork-<variant>`)."""


@dataclass
class StageSettings:
    author: str = ""
    """`Name <email>` the staged pull request's commit is authored by (default: the patch's
    own author)."""
    signoff: bool = False
    """End the staged commit's message with the author's `Signed-off-by:` (upstream does not
    ask for one: 16 of its 414 commits from May to August 2026 carry one)."""


@dataclass
class Settings:
    cache_dir: Path = field(default_factory=_default_cache)
    """Downloads, venvs and checkouts live here, outside the repository."""
    checkout_dir: Path | None = None
    """The TVM checkout that `checkout`, `apply` and `export` work on (default: cache)."""
    out_dir: Path = Path("out")
    """Where wheels and reports are written (ignored by git)."""
    source: str | None = None
    """TVM's source: a URL, a local git directory or a plain folder (default: the lock's URL)."""
    submodules: dict[str, str] = field(default_factory=dict)
    """Per-submodule source overrides, keyed by path (`3rdparty/tvm-ffi`)."""
    mirrors: Path | None = None
    """A folder of mirrors: `checkout` takes TVM and every submodule (nested ones too) that
    `source` and `submodules` do not name from it, found by name (`apache+tvm/repo`,
    `apache/tvm.git`, `tvm`, ...), or from a folder inside one of its wheels (dlpack's headers
    inside the apache-tvm-ffi wheel)."""
    python: str = "python3"
    """The interpreter that test venvs are made from."""
    wheel: WheelSettings = field(default_factory=WheelSettings)
    build: BuildSettings = field(default_factory=BuildSettings)
    stage: StageSettings = field(default_factory=StageSettings)

    def resolved_checkout(self) -> Path:
        return self.checkout_dir or self.cache_dir / "checkout" / "tvm"

    def validate(self) -> None:
        if self.stage.author and not re.fullmatch(r"[^<>]+ <[^<>\s]+@[^<>\s]+>", self.stage.author):
            raise UsageError(f"stage.author must read `Name <email>`, not {self.stage.author!r}")
        if self.wheel.mode not in MODES:
            raise UsageError(
                f"wheel.mode must be one of {', '.join(MODES)}, not {self.wheel.mode!r}"
            )
        if self.wheel.variant not in VARIANTS:
            raise UsageError(
                f"wheel.variant must be one of {', '.join(VARIANTS)}, not {self.wheel.variant!r}"
            )


def _keys(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def _unknown(key: str, known: list[str], where: str) -> UsageError:
    hint = difflib.get_close_matches(key, known, n=1)
    did = f" (did you mean {hint[0]!r}?)" if hint else ""
    return UsageError(f"unknown setting {key!r} in {where}{did}; known: {', '.join(known)}")


_WORDS = {"1": True, "true": True, "yes": True, "on": True}
_WORDS |= {"0": False, "false": False, "no": False, "off": False}


def _convert(value: Any, typ: Any, key: str, where: str) -> Any:
    """`value` (from TOML, the environment or the command line) as the field's annotated type:
    bool, str, Path or dict[str, str], each optionally `| None`."""
    args = [t for t in typing.get_args(typ) if t is not type(None)]
    if typing.get_origin(typ) in (typing.Union, types.UnionType) and len(args) == 1:
        typ = args[0]
    if typ is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _WORDS:
            return _WORDS[value.lower()]
        raise UsageError(f"setting {key!r} in {where} must be true or false, not {value!r}")
    if typing.get_origin(typ) is dict:
        if not isinstance(value, Mapping):
            raise UsageError(f"setting {key!r} in {where} must be a table")
        return {str(k): str(v) for k, v in value.items()}
    if not isinstance(value, str):
        raise UsageError(f"setting {key!r} in {where} must be a string, not {value!r}")
    if typ is Path:
        return Path(value).expanduser()
    if typ is str:
        return value
    raise TypeError(f"setting {key!r}: no conversion to {typ!r}")  # a field of a new type


def _apply(obj: Any, data: Mapping[str, Any], where: str, prefix: str = "") -> None:
    hints = get_type_hints(type(obj))
    known = _keys(type(obj))
    for key, value in data.items():
        if key not in known:
            raise _unknown(prefix + key, [prefix + k for k in known], where)
        current = getattr(obj, key)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, Mapping):
                raise UsageError(f"setting {prefix + key!r} in {where} must be a table")
            _apply(current, value, where, prefix=f"{prefix}{key}.")
        else:
            setattr(obj, key, _convert(value, hints[key], prefix + key, where))


def _env_layer(environ: Mapping[str, str]) -> dict[str, Any]:
    """TVMFORK_CACHE_DIR=... -> cache_dir; TVMFORK_WHEEL__MODE=... -> wheel.mode."""
    out: dict[str, Any] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        parts = name[len(ENV_PREFIX) :].lower().split("__")
        if parts[0] in ("debug",):  # runtime switches, not settings
            continue
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def load(
    root: Path,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Build Settings for the repository at `root` from every layer."""
    settings = Settings()
    config = root / LOCAL_CONFIG
    if config.is_file():
        try:
            data = tomllib.loads(config.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{config}: {exc}") from exc
        _apply(settings, data, str(config))
    _apply(settings, _env_layer(os.environ if environ is None else environ), "the environment")
    if overrides:
        _apply(settings, overrides, "the command line")
    if not settings.out_dir.is_absolute():
        settings.out_dir = root / settings.out_dir
    settings.validate()
    return settings


CLI_PREFIX = "settings."  # the dest of an option that sets a setting: settings.<key>


def cli_dest(key: str) -> str:
    """The argparse dest of the option that sets `key` (`wheel.mode`, `checkout_dir`)."""
    return CLI_PREFIX + key


def overrides_from(args: Any) -> dict[str, Any]:
    """The settings a command line gives (the top layer): every option of `args` (an argparse
    Namespace) whose dest is `cli_dest(key)` and that is set, nested as in tvmfork.local.toml.
    The parser names the key (args.py), so no list here can drift from it: an option whose
    key is not a setting is an unknown-setting error when the settings load."""
    o: dict[str, Any] = {}
    for dest, value in sorted(vars(args).items()):
        if not dest.startswith(CLI_PREFIX) or value is None or value == []:
            continue
        *tables, name = dest[len(CLI_PREFIX) :].split(".")
        node = o
        for table in tables:
            node = node.setdefault(table, {})
        node[name] = _submodules(value) if name == "submodules" else value
    return o


def _submodules(items: list[str]) -> dict[str, str]:
    """`--submodule PATH=SOURCE`, repeated: {path: source}."""
    out = {}
    for item in items:
        path, sep, src = item.partition("=")
        if not sep or not path or not src:
            raise UsageError(f"--submodule takes PATH=SOURCE, not {item!r}")
        out[path.strip("/")] = src
    return out
