"""`verify --against RELEASE`: the patches another release still takes. Textually (a patch
whose Depends-On is left out is left out too), then by importing their modules on the
release's package (`against.importable`), on a small stock package (`conftest`)."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from tvmfork import against, alone
from tvmfork import series as seriesmod
from tvmfork.wheel import overlay, repack

from .conftest import PY_FILE, PY_TEXT, Fork, make_stock_wheel

pytestmark = pytest.mark.unit


def _package(wheel: Path, tmp_path: Path) -> Path:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    return site / "tvm"


def test_module_of() -> None:
    assert against.module_of("python/tvm/relax/legalize.py") == "tvm.relax.legalize"
    assert against.module_of("python/tvm/s_tir/__init__.py") == "tvm.s_tir"
    assert against.module_of("python/tvm/relax/op.pyi") is None
    assert against.module_of("src/op.cc") is None


def test_a_patch_that_breaks_an_import_is_dropped_with_its_dependents(
    fork: Fork, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A applies but imports a name the release does not have: A, and B (another file) that
    depends on it, are dropped with the import error; C, in a third file, stays."""
    fork.commit_change(
        PY_FILE,
        "def op3(x):",
        "from tvm import renamed_away\n\n\ndef op3(x):",
        "[Relax] Fix op3",
    )
    fork.commit_change(
        "python/tvm/relax/uses.py", "", "Y = 2\n", "[Relax] Add uses", extra="Depends-On: fix-op3\n"
    )
    fork.commit_change("python/tvm/relax/other.py", "", "X = 1\n", "[Relax] Add other")
    assert fork.run("export") == 0
    series = seriesmod.load(fork.root / "patches")
    package = _package(fork.wheel, tmp_path)
    monkeypatch.setattr(alone, "stock_package", lambda python: package)
    kept, dropped = against.importable(
        series, list(series.patches), Path(sys.executable), fork.wheel, tmp_path / "cache"
    )
    assert [p.name for p in kept] == ["add-other.patch"]
    assert dropped["fix-op3.patch"].startswith(
        "applies, but `import tvm.relax.legalize` then fails in python/tvm/relax/legalize.py: "
        "ImportError: cannot import name 'renamed_away'"
    ), dropped
    assert dropped["add-uses.patch"].startswith("its Depends-On is dropped (applies, but"), dropped
    assert str(tmp_path) not in dropped["fix-op3.patch"]  # no machine path in a docs page
    # nothing breaks: every patch is kept
    ok, none = against.importable(
        series, [series.get("add-other.patch")], Path(sys.executable), fork.wheel, tmp_path / "c2"
    )
    assert [p.name for p in ok] == ["add-other.patch"] and none == {}


def test_applicable_leaves_out_a_patch_whose_depends_on_is_left_out(fork: Fork) -> None:
    fork.commit_change(PY_FILE, "return x + 3", "return x - 3", "[Relax] Fix op3")
    fork.commit_change(
        PY_FILE, "return x + 4", "return x - 4", "[Relax] Fix op4", extra="Depends-On: fix-op3\n"
    )
    assert fork.run("export") == 0
    series = seriesmod.load(fork.root / "patches")
    other = make_stock_wheel(fork.root / "other", body=PY_TEXT.replace("x + 3", "x * 3"))
    chosen, left_out = overlay.applicable(series, other)
    assert chosen == []
    assert "does not apply to" in left_out["fix-op3.patch"]
    assert left_out["fix-op4.patch"] == "its Depends-On fix-op3.patch is left out"


def test_another_release_keeps_its_own_tvm_ffi_requirement() -> None:
    meta = "Name: apache-tvm\nVersion: 0.27.0\nRequires-Dist: apache-tvm-ffi>=0.1.14.post0\n"
    kept = repack.rewrite_metadata(meta, "0.27.0+fork.x", None)
    assert "Version: 0.27.0+fork.x" in kept
    assert repack.ffi_requirement(kept) == ">=0.1.14.post0"
    bounded = repack.rewrite_metadata(meta, "0.27.0+fork.x", ">=0.1.13,<0.1.15")
    assert repack.ffi_requirement(bounded) == ">=0.1.13,<0.1.15"


def test_a_patch_that_uses_a_name_the_release_lacks_is_dropped(
    fork: Fork, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module imports, but a function the patch changes calls `tvm.renamed_away`, which
    the release does not have: found from the lines the patch adds, before any test runs."""
    fork.commit_change(
        PY_FILE,
        "def op3(x):\n    return x + 3",
        "def op3(x):\n    import tvm\n\n    return tvm.renamed_away(x)  # tvm.in_a_comment",
        "[Relax] Fix op3",
    )
    fork.commit_change(
        "python/tvm/relax/other.py", "", "import tvm\n\nX = 1\n", "[Relax] Add other"
    )
    assert fork.run("export") == 0
    series = seriesmod.load(fork.root / "patches")
    assert against.added_names(series.get("fix-op3.patch")) == {
        "tvm.relax.legalize": {"tvm.renamed_away"}
    }
    package = _package(fork.wheel, tmp_path)
    monkeypatch.setattr(alone, "stock_package", lambda python: package)
    kept, dropped = against.importable(
        series, list(series.patches), Path(sys.executable), fork.wheel, tmp_path / "cache"
    )
    assert [p.name for p in kept] == ["add-other.patch"]
    assert dropped == {
        "fix-op3.patch": "applies, but uses `tvm.renamed_away` in tvm.relax.legalize, which "
        f"{fork.wheel.name} does not have"
    }
