"""What a command works with: its parsed options, its repository, settings, lock and series,
the TVM checkout and the stock and fork test venvs; each found or made on first use."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import TYPE_CHECKING

from tvmfork import lock as lockmod
from tvmfork import series as seriesmod
from tvmfork import settings
from tvmfork.errors import SourceError, UsageError

if TYPE_CHECKING:
    from tvmfork import sides


def find_root(start: Path) -> Path:
    for d in [start, *start.parents]:
        if (d / "patches" / seriesmod.LOCK).is_file():
            return d
    raise UsageError(
        f"no tvmfork repository at or above {start} (looked for patches/{seriesmod.LOCK}); "
        "run inside the repository or pass --repo"
    )


class Ctx:
    """A command's parsed options, and (on first use) its repository and settings: `info`
    needs neither."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args

    @functools.cached_property
    def root(self) -> Path:
        return find_root(Path(self.args.repo or Path.cwd()).resolve())

    @functools.cached_property
    def settings(self) -> settings.Settings:
        return settings.load(self.root, overrides=settings.overrides_from(self.args))

    @property
    def patches_dir(self) -> Path:
        return self.root / "patches"

    def lock(self) -> lockmod.Lock:
        return lockmod.load(self.patches_dir / seriesmod.LOCK)

    def series(self) -> seriesmod.Series:
        return seriesmod.load(self.patches_dir)

    def checkout_dir(self) -> Path:
        return self.settings.resolved_checkout()


def require_checkout(ctx: Ctx) -> Path:
    """The TVM checkout, or a SourceError that says how to make one."""
    path = ctx.checkout_dir()
    if not (path / ".git").exists():
        raise SourceError(
            f"no TVM checkout at {path}; make one with `tvmfork checkout` (or `make "
            "checkout`), or point --checkout / checkout_dir at yours"
        )
    return path


def test_sides(ctx: Ctx, series: seriesmod.Series) -> sides.Sides:
    from tvmfork import sides  # imports the wheel builders: only for the commands that test

    a = ctx.args
    wheel = Path(a.wheel).resolve() if getattr(a, "wheel", None) else None
    return sides.test_sides(
        ctx.settings,
        ctx.lock(),
        series,
        ctx.root,
        stock_ffi=a.stock_ffi,
        against=getattr(a, "against", None),
        fork_wheel=wheel,
    )
