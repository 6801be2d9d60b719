"""`tvmfork wheel`: which wheel to build (mode auto, overlay or source), and building it.

`auto` builds from source when the series has native patches and a source build can run
here (a checkout, the toolchain); otherwise an overlay of the stock wheel, saying which native
patches it leaves out and why. The functions return the lines the command prints.
"""

from __future__ import annotations

import time
from pathlib import Path

from tvmfork import stock, ui
from tvmfork.errors import SourceError, ToolchainError, UsageError
from tvmfork.lock import Lock, WheelFile
from tvmfork.series import Series
from tvmfork.settings import Settings
from tvmfork.wheel import overlay, source


def overlay_wheel(
    settings: Settings,
    lock: Lock,
    series: Series,
    python_only: bool,
    wanted: WheelFile | None = None,
) -> overlay.OverlayResult:
    """The overlay wheel of `series` on the lock's stock wheel `wanted` (default: this
    machine's), fetched and verified."""
    path, _ = stock.fetch(lock, settings.cache_dir, settings.wheel.stock_wheel, wanted)
    with ui.step(f"overlay wheel from {path.name}"):
        return overlay.build(lock, series, path, settings.out_dir, python_only)


def source_preflight(
    settings: Settings, lock: Lock, series: Series, root: Path
) -> source.Preflight | str:
    """What a source build would build with here, or why it cannot run (no checkout, no
    variant, a missing tool). The preflight's error is this function's result, so it is
    caught here."""
    try:
        return source.SourceBuild(settings, lock, series, root).found
    except (SourceError, ToolchainError, UsageError) as exc:
        return str(exc)


def source_unavailable(settings: Settings, lock: Lock, series: Series, root: Path) -> str | None:
    """Why a source build cannot run here, or None."""
    found = source_preflight(settings, lock, series, root)
    return found if isinstance(found, str) else None


def _source(
    settings: Settings,
    lock: Lock,
    series: Series,
    root: Path,
    found: source.Preflight | None = None,
) -> list[str]:
    res = source.SourceBuild(settings, lock, series, root, found).run()
    size = res.path.stat().st_size / 1e6
    return [
        f"built {res.path} ({size:.1f} MB) in {res.seconds['total']:.0f} s",
        f"  version {res.version}; mode source; variant {res.variant}",
        f"  included ({len(series.patches)}): all patches, native ones too",
        *source.describe(res),
    ]


def build(settings: Settings, lock: Lock, series: Series, root: Path) -> list[str]:
    """Build the wheel `settings.wheel` asks for; the summary to print."""
    ws = settings.wheel
    if ws.platform and ws.mode == "source":
        raise UsageError(
            f"--platform {ws.platform}: a source build is for this machine's platform; "
            "other platforms' wheels are overlays (--mode overlay)"
        )
    if ws.mode == "source":
        return _source(settings, lock, series, root)
    native = [p.name for p in series.patches if series.needs_build(p)]
    python_only = ws.python_only
    if ws.mode == "auto" and native and not python_only and not ws.platform:
        found = source_preflight(settings, lock, series, root)
        if not isinstance(found, str):  # checked once: the build takes what was found
            ui.note(f"auto: the series has {len(native)} native patch(es): building from source")
            return _source(settings, lock, series, root, found)
        ui.note(
            f"auto: cannot build from source ({found}), so this is an overlay wheel "
            f"WITHOUT the native patch(es): {', '.join(native)}"
        )
        python_only = True
    if ws.variant != "cpu":
        ui.note(
            f"note: an overlay wheel keeps the stock wheel's binaries (CUDA-enabled); "
            f"variant {ws.variant!r} only selects source builds"
        )
    if ws.mode == "auto" and native and ws.platform:
        ui.note(
            f"auto: --platform {ws.platform} builds overlay wheels, WITHOUT the native "
            f"patch(es): {', '.join(native)}"
        )
        python_only = True
    lines = []
    for wanted in stock.select(lock, ws.platform):
        start = time.monotonic()
        res = overlay_wheel(settings, lock, series, python_only, wanted)
        size = res.path.stat().st_size / 1e6
        lines += [
            f"built {res.path} ({size:.1f} MB) in {time.monotonic() - start:.1f} s",
            f"  version {res.version}; mode overlay; platform {res.platform}",
            f"  included ({len(res.included)}): {', '.join(res.included) or 'none'}",
        ]
        if res.left_out:
            names = ", ".join(res.left_out)
            lines.append(f"  LEFT OUT ({len(res.left_out)}, need a source build): {names}")
    return lines
