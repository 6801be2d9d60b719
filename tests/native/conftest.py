"""The native lane: a source-built fork wheel and the build tree it came from.

Opt-in (`make test-native`): it needs `tvmfork checkout` and `make wheel MODE=source`
(most of an hour cold). Whatever is missing turns into a skip that says what to run; a
wheel built from another series than patches/ is a failure, not a skip. A run in which no
test ran reads "native lane: NOT RUN" with the reasons and exits non-zero, so a green native
lane always means tests ran; `--allow-not-run` (make test-native ALLOW_NOT_RUN=1) makes that
exit 0, still saying NOT RUN.
"""

from __future__ import annotations

import datetime
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tvmfork import hostcpu, nativelane
from tvmfork import lock as lockmod
from tvmfork import series as seriesmod
from tvmfork import settings as settingsmod
from tvmfork.wheel import source

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Native:
    settings: settingsmod.Settings
    lock: lockmod.Lock
    series: seriesmod.Series
    variant: str
    checkout: Path
    build_dir: Path
    wheel: Path


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tvmfork native lane")
    group.addoption(
        "--native-variant",
        default=None,
        help="the source wheel's variant to test (cpu, cuda); default the settings' wheel.variant",
    )
    group.addoption(
        "--allow-not-run",
        action="store_true",
        help="exit 0 when no test ran (the lane still reports NOT RUN)",
    )


NATIVE_KEY = pytest.StashKey["Native"]()


def _record(session: pytest.Session, stats: dict[str, list[object]]) -> None:
    """A passing lane over the whole of tests/native writes its result to the docs."""
    native = session.config.stash.get(NATIVE_KEY, None)
    whole = all(Path(a).resolve() == Path(__file__).parent for a in session.config.args)
    if native is None or not whole or session.config.getoption("keyword"):
        return  # a subset of the lane proves a subset: no record
    commit = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    result = nativelane.Result(
        date=datetime.date.today().isoformat(),
        commit=commit or "unknown",
        wheel=native.wheel.name,
        counts={k: len(stats.get(k, [])) for k in ("passed", "skipped") if stats.get(k)},
        machine=hostcpu.describe(),
    )
    (REPO / nativelane.RECORD).write_text(nativelane.render(native.series, result))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = reporter.stats if reporter is not None else {}
    ran = sum(len(stats.get(k, [])) for k in ("passed", "failed", "error"))
    if ran and exitstatus == pytest.ExitCode.OK:
        _record(session, stats)
    if ran or exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        return
    reasons = sorted({str(r.longrepr[-1]) for r in stats.get("skipped", []) if r.longrepr})
    lines = ["native lane: NOT RUN (no test ran)", *(f"  {r}" for r in reasons)]
    if reporter is not None:
        reporter.write_line("")
        reporter.write_line("\n".join(lines), red=True, bold=True)
    if not session.config.getoption("allow_not_run"):
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED


@pytest.fixture(autouse=True)
def _mark_native(request: pytest.FixtureRequest) -> None:
    request.node.add_marker(pytest.mark.native)


@pytest.fixture(scope="session")
def native(pytestconfig: pytest.Config) -> Native:
    settings = settingsmod.load(REPO)
    variant = pytestconfig.getoption("native_variant") or settings.wheel.variant
    lock = lockmod.load(REPO / "patches" / "lock.toml")
    series = seriesmod.load(REPO / "patches")
    checkout = settings.resolved_checkout()
    if not (checkout / ".git").exists():
        pytest.skip(f"native lane: no TVM checkout at {checkout} (run `tvmfork checkout`)")
    build_dir = settings.build.build_dir or checkout / "build" / f"tvmfork-{variant}"
    version = source.local_version(lock, series, variant)
    wheels = sorted(settings.out_dir.glob(f"apache_tvm-{version}-*.whl"))
    if not wheels:
        others = sorted(p.name for p in settings.out_dir.glob(f"apache_tvm-*.{variant}-*.whl"))
        hint = f" (found only other series' wheels: {others})" if others else ""
        pytest.skip(
            f"native lane: no source-built {variant} wheel {version} in {settings.out_dir}"
            f"{hint}; run `make wheel MODE=source VARIANT={variant}`"
        )
    found = Native(settings, lock, series, variant, checkout, build_dir, wheels[-1])
    pytestconfig.stash[NATIVE_KEY] = found
    return found


def cmake_program(native: Native) -> str:
    """cmake >= 3.26: the source build's own (in its build venv) or one on PATH."""
    for cand in sorted(native.settings.cache_dir.glob("venvs/buildenv-*/bin/cmake")):
        return str(cand)
    found = shutil.which("cmake")
    if not found:
        pytest.skip("native lane: no cmake (make wheel MODE=source installs one)")
    return found
