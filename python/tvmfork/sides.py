"""The two sides every proof runs on: a venv with the stock TVM wheel and one with the fork's,
sharing the deps venv (`venvs`). `verify`, `conformance`, `upstream-tests` and `envs` get
them from `test_sides`; tests find them with `side_python`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tvmfork import manifest, stock, ui, venvs
from tvmfork.against import importable
from tvmfork.errors import UsageError
from tvmfork.lock import Lock
from tvmfork.series import Series
from tvmfork.settings import Settings
from tvmfork.wheel import overlay
from tvmfork.wheel.build import overlay_wheel

FORK_VENV = "fork"


def _stock_venv(wheel_sha256: str) -> str:
    return f"stock-{wheel_sha256[:12]}"


def side_python(settings: Settings, lock: Lock, side: str) -> Path:
    """The interpreter of a side's venv in the cache, as `test_sides` names it: "fork" (the
    overlay of this series) or "stock" (the lock's stock wheel for this platform). Tests that
    use the venvs `tvmfork envs` made call this."""
    vroot = settings.cache_dir / "venvs"
    if side == "fork":
        return venvs.python_of(vroot / FORK_VENV)
    if side == "stock":
        return venvs.python_of(vroot / _stock_venv(stock.pick(lock).sha256))
    raise UsageError(f"unknown side {side!r}: stock or fork")


@dataclass(frozen=True)
class Sides:
    """The stock and fork venvs of verify, conformance and upstream-tests, and the wheel each
    was made from."""

    stock: Path
    fork: Path
    included: set[str]
    stock_only: dict[str, str]  # patches whose fork side cannot run, and why
    stock_wheel: Path
    fork_wheel: Path
    sha256: dict[str, str]  # each side's wheel's, by side

    def wheels(self) -> dict[str, Path]:
        return {"stock": self.stock_wheel, "fork": self.fork_wheel}


def test_sides(
    settings: Settings,
    lock: Lock,
    series: Series,
    root: Path,
    *,
    stock_ffi: str,
    against: str | None = None,
    fork_wheel: Path | None = None,
) -> Sides:
    """Make or reuse the two venvs. The stock side is the lock's stock wheel with `stock_ffi`,
    the fork side the overlay of the Python patches, or `fork_wheel` (e.g. a source or a CUDA
    wheel), in a venv of its own named by its sha256, so that testing a given wheel never
    replaces the overlay's venv.

    With `against`, the stock side is that release from PyPI (or a wheel file) and the fork
    side an overlay of its wheel with the Python patches that still apply to it
    (`against.importable`), or `fork_wheel` when given (a roll's proof: stock REV against the
    rolled build); both with `stock_ffi`, the release's tvm-ffi.
    """
    deps, reqs = venvs.deps_venv(settings, root)
    stock_only: dict[str, str] = {}
    vroot = settings.cache_dir / "venvs"
    if against:
        if against.endswith(".whl"):  # a wheel built here: upstream at another commit
            base_wheel = Path(against).resolve()
            if not base_wheel.is_file():
                raise UsageError(f"--against {against}: no such wheel")
        else:
            base_wheel = stock.download(against, settings.cache_dir / "wheels" / "against")
        stock_sha = stock.sha256_of(base_wheel)
        ui.note(f"{base_wheel.name}: sha256 {stock_sha} (not in the lock)")
        release = str(base_wheel) if against.endswith(".whl") else against
        stock_reqs = [release, stock_ffi]
        stock_name = f"stock-{venvs.key(release, stock_ffi, stock_sha)}"
        stock_wheel, fork_name = base_wheel, f"{FORK_VENV}-against-{stock_sha[:12]}"
        if fork_wheel:  # both given: a roll's proof, stock REV against the rolled build
            wheel, included = fork_wheel, manifest.included_in(fork_wheel)
        else:
            chosen, stock_only = overlay.applicable(series, base_wheel)
            venvs.ensure(deps, reqs, python=settings.python)
            release_py = venvs.ensure(
                vroot / stock_name, stock_reqs, python=settings.python, deps_venv=deps
            )
            with ui.step(f"import the {len(chosen)} patches that apply on {base_wheel.name}"):
                chosen, broken = importable(
                    series, chosen, release_py, base_wheel, settings.cache_dir / "alone"
                )
            stock_only.update(broken)
            with ui.step(f"overlay wheel from {base_wheel.name}"):
                res = overlay.build(
                    lock, series, base_wheel, settings.out_dir / "against", only=chosen
                )
            wheel, included = res.path, set(res.included)
    else:
        stock_path, stock_wf = stock.fetch(lock, settings.cache_dir, settings.wheel.stock_wheel)
        if fork_wheel:
            wheel, included = fork_wheel, manifest.included_in(fork_wheel)
        else:
            res = overlay_wheel(settings, lock, series, python_only=True)
            wheel, included = res.path, set(res.included)
        stock_reqs = [str(stock_path), stock_ffi]
        stock_name = _stock_venv(stock_wf.sha256)
        stock_wheel, stock_sha, fork_name = stock_path, stock_wf.sha256, FORK_VENV
    fork_sha = stock.sha256_of(wheel)
    if fork_wheel:  # a given wheel: a venv of its own
        fork_name = f"{FORK_VENV}-{fork_sha[:12]}"
    venvs.ensure(deps, reqs, python=settings.python)
    stock_py = venvs.ensure(vroot / stock_name, stock_reqs, python=settings.python, deps_venv=deps)
    fork_py = venvs.ensure(
        vroot / fork_name,
        [str(wheel), stock_ffi] if against else [str(wheel)],  # the release's tvm-ffi on both
        python=settings.python,
        deps_venv=deps,
        fingerprint=fork_sha,
    )
    shas = {"stock": stock_sha, "fork": fork_sha}
    return Sides(stock_py, fork_py, included, stock_only, stock_wheel, wheel, shas)
