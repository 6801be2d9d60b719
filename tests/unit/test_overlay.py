"""Overlay wheels: reproducible, verified input, correct RECORD, native patches handled."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from tvmfork import lock as lockmod
from tvmfork import series as seriesmod
from tvmfork import stock
from tvmfork.errors import IntegrityError, UsageError
from tvmfork.wheel import overlay

from .conftest import PY_FILE, Fork, make_stock_wheel

pytestmark = pytest.mark.unit


def _build(fork: Fork, out: Path, python_only: bool = False) -> overlay.OverlayResult:
    lock = lockmod.load(fork.root / "patches/lock.toml")
    path, _ = stock.fetch(lock, fork.root, fork.wheel)
    return overlay.build(lock, seriesmod.load(fork.root / "patches"), path, out, python_only)


@pytest.fixture
def py_fork(fork: Fork) -> Fork:
    fork.commit_change(PY_FILE, "return x + 3", "return x - 3", "[Relax] Fix op3")
    fork.commit_change("python/tvm/relax/new_mod.py", "", "VALUE = 1\n", "[Relax] Add module")
    assert fork.run("export") == 0
    return fork


def test_overlay_content_and_record(py_fork: Fork, tmp_path: Path) -> None:
    res = _build(py_fork, tmp_path / "a")
    assert res.version.startswith("1.0.0+fork.") and not res.version.endswith(".py")
    info = f"apache_tvm-{res.version}.dist-info"
    with zipfile.ZipFile(res.path) as zf:
        assert "return x - 3" in zf.read("tvm/relax/legalize.py").decode()
        assert zf.read("tvm/relax/new_mod.py") == b"VALUE = 1\n"
        meta = zf.read(f"{info}/METADATA").decode()
        assert f"Version: {res.version}" in meta
        assert "Requires-Dist: apache-tvm-ffi>=0.1.0,<0.2" in meta
        assert f"'{res.version}'" in zf.read("tvm/_version.py").decode()
        manifest = json.loads(zf.read("tvm/fork_manifest.json"))
        assert [p["included"] for p in manifest["patches"]] == [True, True]
        assert manifest["upstream"]["commit"] == py_fork.upstream.commit
        assert not any(n.startswith("apache_tvm-1.0.0.dist-info") for n in zf.namelist())
        rows = list(csv.reader(io.StringIO(zf.read(f"{info}/RECORD").decode())))
        recorded = {r[0] for r in rows}
        assert recorded == {n for n in zf.namelist() if not n.endswith("/")}
        for name, digest, size in rows:
            if name.endswith("RECORD"):
                continue
            data = zf.read(name)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            if name in ("tvm/relax/legalize.py", "tvm/fork_manifest.json"):
                assert digest == f"sha256={want}" and int(size) == len(data)
        assert zf.testzip() is None


def test_two_builds_are_byte_identical(py_fork: Fork, tmp_path: Path) -> None:
    a = _build(py_fork, tmp_path / "a").path.read_bytes()
    b = _build(py_fork, tmp_path / "b").path.read_bytes()
    assert a == b


def test_tampered_stock_wheel_is_an_error(py_fork: Fork) -> None:
    with zipfile.ZipFile(py_fork.wheel, "a") as zf:
        zf.writestr("tvm/evil.py", "x = 1\n")
    with pytest.raises(IntegrityError, match="sha256"):
        _build(py_fork, py_fork.root / "out")


def test_native_patch_needs_python_only(py_fork: Fork, tmp_path: Path) -> None:
    py_fork.commit_change("src/op.cc", "return 1", "return 42", "[Op] Native fix")
    assert py_fork.run("export") == 0
    with pytest.raises(UsageError, match=r"native-fix\.patch"):
        _build(py_fork, tmp_path / "n")
    res = _build(py_fork, tmp_path / "n", python_only=True)
    assert res.left_out == ["native-fix.patch"] and res.version.endswith(".py")
    with zipfile.ZipFile(res.path) as zf:
        manifest = json.loads(zf.read("tvm/fork_manifest.json"))
    assert {p["name"]: p["included"] for p in manifest["patches"]} == {
        "fix-op3.patch": True,
        "add-module.patch": True,
        "native-fix.patch": False,
    }


def test_cli_wheel_auto_says_what_it_left_out(
    py_fork: Fork, capsys: pytest.CaptureFixture[str]
) -> None:
    py_fork.commit_change("src/op.cc", "return 1", "return 42", "[Op] Native fix")
    assert py_fork.run("export") == 0
    assert py_fork.run("wheel", "--out", str(py_fork.root / "out")) == 0
    out = capsys.readouterr()
    assert "LEFT OUT (1, need a source build): native-fix.patch" in out.out
    assert "WITHOUT the native patch(es): native-fix.patch" in out.err
    assert py_fork.run("wheel", "--mode", "overlay") == 2  # no --python-only: refused


def test_applicable_keeps_the_patches_that_apply_in_order(py_fork: Fork) -> None:
    """`overlay.applicable` (verify --against, and check's overlay check): each Python patch that
    applies after those before it; native ones and ones that do not apply, with the reason."""
    py_fork.commit_change("src/op.cc", "return 1", "return 42", "[Op] Native fix")
    assert py_fork.run("export") == 0
    series = seriesmod.load(py_fork.root / "patches")
    chosen, left_out = overlay.applicable(series, py_fork.wheel)
    assert [p.name for p in chosen] == ["fix-op3.patch", "add-module.patch"]
    assert left_out == {"native-fix.patch": "native patch: needs a source build"}
    other = make_stock_wheel(py_fork.root / "other", body="def op3(x):\n    return x * 3\n")
    chosen, left_out = overlay.applicable(series, other)
    assert [p.name for p in chosen] == ["add-module.patch"]
    assert "does not apply to" in left_out["fix-op3.patch"]


def test_wheel_build_auto_falls_back_to_an_overlay_saying_why(
    py_fork: Fork, capsys: pytest.CaptureFixture[str]
) -> None:
    """wheel.build.build, mode auto, native patch, no toolchain for a source build: an overlay
    without the native patch, and the reason on stderr."""
    from tvmfork import settings
    from tvmfork.wheel import build

    py_fork.commit_change("src/op.cc", "return 1", "return 42", "[Op] Native fix")
    assert py_fork.run("export") == 0
    s = settings.load(py_fork.root, overrides={"out_dir": str(py_fork.root / "out")})
    lock = lockmod.load(py_fork.root / "patches/lock.toml")
    series = seriesmod.load(py_fork.root / "patches")
    reason = build.source_unavailable(s, lock, series, py_fork.root)
    assert reason  # the fake checkout has no variant file or toolchain to build TVM
    lines = build.build(s, lock, series, py_fork.root)
    assert lines[-1] == "  LEFT OUT (1, need a source build): native-fix.patch"
    assert reason in capsys.readouterr().err


def test_cached_stock_wheel_is_found_without_a_download(py_fork: Fork, tmp_path: Path) -> None:
    lock = lockmod.load(py_fork.root / "patches/lock.toml")
    cache = tmp_path / "a-cache"
    assert stock.cached(lock, cache, py_fork.wheel) == py_fork.wheel  # a local wheel
    assert stock.cached(lock, cache) is None  # nothing in this cache
    (cache / "wheels").mkdir(parents=True)
    (cache / "wheels" / py_fork.wheel.name).write_bytes(py_fork.wheel.read_bytes())
    assert stock.cached(lock, cache) == cache / "wheels" / py_fork.wheel.name


def test_a_python_patch_needing_a_native_one_is_left_out_with_it(
    py_fork: Fork, tmp_path: Path
) -> None:
    """A Python patch whose Depends-On patch is native calls what that one compiles: an overlay
    (which cannot carry the native one) leaves both out, and says why."""
    py_fork.commit_change("src/op.cc", "return 1", "return 42", "[Op] Native fix")
    py_fork.commit_change(
        "python/tvm/relax/uses_native.py",
        "",
        "VALUE = 2\n",
        "[Relax] Use the native fix",
        extra="Depends-On: native-fix.patch\n",
    )
    assert py_fork.run("export") == 0
    series = seriesmod.load(py_fork.root / "patches")
    user = series.get("use-the-native-fix")
    assert not user.native
    assert series.needs_build(user) == "depends on native native-fix.patch: needs a source build"
    _, left_out = overlay.applicable(series, py_fork.wheel)
    assert set(left_out) == {"native-fix.patch", "use-the-native-fix.patch"}
    res = _build(py_fork, tmp_path / "out", python_only=True)
    assert "use-the-native-fix.patch" in res.left_out
    with zipfile.ZipFile(res.path) as zf:
        assert "tvm/relax/uses_native.py" not in zf.namelist()


@pytest.mark.parametrize(
    ("filename", "name"),
    [
        (
            "apache_tvm-0.26.0-py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
            "linux_x86_64",
        ),
        (
            "apache_tvm-0.26.0-py3-none-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl",
            "linux_aarch64",
        ),
        ("apache_tvm-0.26.0-py3-none-manylinux2014_aarch64.whl", "linux_aarch64"),
        ("apache_tvm-0.26.0-py3-none-macosx_11_0_arm64.whl", "macosx_arm64"),
        ("apache_tvm-0.26.0-py3-none-win_amd64.whl", "win_amd64"),
    ],
)
def test_platform_names(filename: str, name: str) -> None:
    assert stock.platform_name(lockmod.WheelFile(filename, "0" * 64)) == name


def _with_platform_wheels(fork: Fork, tmp_path: Path) -> Path:
    """The lock names two more stock wheels (aarch64; Windows, CRLF), all three in the cache
    (no local stock wheel); the cache's wheels folder."""
    wheels = tmp_path / "cache" / "wheels"
    added = [
        make_stock_wheel(wheels, platform="manylinux_2_28_aarch64"),
        make_stock_wheel(wheels, platform="win_amd64", crlf=True),
    ]
    shutil.copy(fork.wheel, wheels)
    lock = fork.root / "patches/lock.toml"
    entries = "".join(
        f'\n[[stock_wheel.file]]\nfilename = "{w.name}"\n'
        f'sha256 = "{hashlib.sha256(w.read_bytes()).hexdigest()}"\n'
        for w in added
    )
    text = lock.read_text()
    lock.write_text(text.replace("\n[tvm_ffi]", entries + "\n[tvm_ffi]"))
    local = fork.root / "tvmfork.local.toml"
    local.write_text(local.read_text().split("[wheel]")[0])
    return wheels


def test_overlay_wheels_for_every_platform_of_the_lock(
    py_fork: Fork, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _with_platform_wheels(py_fork, tmp_path)
    built: dict[str, dict[str, bytes]] = {}
    for out in ("a", "b"):
        args = ["wheel", "--mode", "overlay", "--platform", "all", "--out", str(tmp_path / out)]
        assert py_fork.run(*args) == 0
        built[out] = {p.name: p.read_bytes() for p in (tmp_path / out).glob("*.whl")}
    assert built["a"] == built["b"]  # byte-reproducible
    assert sorted(n.rsplit("-", 1)[1] for n in built["a"]) == [
        "any.whl",
        "manylinux_2_28_aarch64.whl",
        "win_amd64.whl",
    ]
    for name in built["a"]:
        with zipfile.ZipFile(tmp_path / "a" / name) as zf:
            manifest = json.loads(zf.read("tvm/fork_manifest.json"))
            assert name.endswith(f"-{manifest['platform']['tag']}.whl")
            fixed = zf.read("tvm/relax/legalize.py")
            version = zf.read("tvm/_version.py")
            assert b"return x - 3" in fixed
            if name.endswith("win_amd64.whl"):  # patched on LF copies, CRLF kept
                for data in (fixed, version, zf.read("tvm/relax/new_mod.py")):
                    assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
            else:
                assert b"\r" not in fixed
    assert "platform win_amd64" in capsys.readouterr().out


def test_an_unknown_platform_names_the_lock_s(
    py_fork: Fork, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _with_platform_wheels(py_fork, tmp_path)
    assert py_fork.run("wheel", "--mode", "overlay", "--platform", "linux_riscv64") == 2
    err = capsys.readouterr().err
    assert "'linux_riscv64'" in err and "any, linux_aarch64, win_amd64 (or give all)" in err
    assert py_fork.run("wheel", "--mode", "source", "--platform", "linux_aarch64") == 2
    assert "a source build is for this machine's platform" in capsys.readouterr().err
