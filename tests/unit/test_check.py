"""`tvmfork check`: series entries, trailers, classification, overlay applicability."""

from __future__ import annotations

import pytest

from tvmfork import check
from tvmfork.series import classify

from .conftest import PY_FILE, Fork, make_stock_wheel, write

pytestmark = pytest.mark.unit


@pytest.fixture
def exported(fork: Fork) -> Fork:
    fork.commit_change(PY_FILE, "return x + 3", "return x - 3", "[Relax] Fix op3")
    fork.commit_change("src/op.cc", "return 1", "return 42", "[Op] Native fix")
    fork.commit_change(
        "tests/python/test_op.py", "", "def test_more():\n    pass\n", "[Test] Only tests"
    )
    assert fork.run("export") == 0
    return fork


def test_sound_series(exported: Fork) -> None:
    report = check.run(exported.root, exported.wheel)
    assert report.problems == []
    kinds = {p.name: p.native for p in report.series.patches}
    assert kinds == {"fix-op3.patch": False, "native-fix.patch": True, "only-tests.patch": False}
    native_note = [n for n in report.notes if "only by the native lane" in n]
    assert native_note and native_note[0].endswith("out): native-fix.patch")
    assert any("apply cleanly" in n for n in report.notes)


def test_classify() -> None:
    assert classify("python/tvm/relax/x.py") == "python"
    assert classify("tests/python/relax/test_x.py") == "test"
    assert classify("src/relax/op.cc") == "native"
    assert classify("python/setup.py") == "native"  # not shipped by an overlay


def test_duplicate_and_missing_entries(exported: Fork) -> None:
    write(exported.root / "patches/series", "fix-op3.patch\nfix-op3.patch\nghost.patch\n")
    problems = check.run(exported.root, None).problems
    text = "\n".join(problems)
    assert "fix-op3.patch is listed more than once" in text
    assert "ghost.patch is listed but the file does not exist" in text


def test_unlisted_patch(exported: Fork) -> None:
    write(exported.root / "patches/series", "fix-op3.patch\nnative-fix.patch\n")
    problems = check.run(exported.root, None).problems
    assert problems == ["only-tests.patch is in patches/ but not listed in the series"]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("Upstream-Status: pending", "Upstream-Status: someday", "is not one of"),
        ("Fixes: patches/README.md#example; apache/tvm#1\n", "", "missing trailer Fixes"),
        ("tests/regression/test_example.py", "tests/regression/test_gone.py", "does not exist"),
        ("tests/regression/test_example.py", "tests/unit/test_x.py", "not under tests/regression"),
        # a test function the module does not define
        ("tests/regression/test_example.py", "tests/regression/test_example.py::test_y", "exist"),
        ("Upstream-Status: pending", "Depends-On: gone.patch\nUpstream-Status: pending", "gone"),
    ],
)
def test_bad_trailers(exported: Fork, old: str, new: str, expected: str) -> None:
    p = exported.root / "patches/fix-op3.patch"
    p.write_text(p.read_text().replace(old, new))
    problems = check.run(exported.root, None).problems
    assert len(problems) == 1 and expected in problems[0] and "fix-op3.patch" in problems[0]


def test_python_patch_that_does_not_fit_the_stock_wheel(exported: Fork) -> None:
    other = make_stock_wheel(exported.root.parent / "other", body="something else\n")
    problems = check.run(exported.root, other).problems
    assert len(problems) == 1 and "fix-op3.patch do not apply to the stock wheel" in problems[0]


def test_cli_check_exit_code(exported: Fork) -> None:
    assert exported.run("check") == 0
    write(exported.root / "patches/series", "ghost.patch\n")
    assert exported.run("check") == 5


def test_tvm_ffi_range_is_derived_and_the_table_checked(exported: Fork) -> None:
    from tvmfork import lock as lockmod

    lock_path = exported.root / "patches/lock.toml"
    lock = lockmod.load(lock_path)
    assert lock.tvm_ffi_requirement == ">=0.1.0,<0.2.0"
    assert lock.ffi_table_problems() == []
    lock_path.write_text(lock_path.read_text().replace('"0.1.5"', '"0.2.1"'))
    problems = check.run(exported.root, None).problems
    assert problems == ["tvm-ffi 0.2.1 is listed compatible but outside <0.2.0,>=0.1.0"]


def test_fixes_references_must_resolve(fork: Fork) -> None:
    fork.commit_change(PY_FILE, "return x + 3", "return x - 3", "[A] a", fixes="BUGS.md section 2")
    fork.commit_change("src/op.cc", "return 1", "return 2", "[B] b", fixes="patches/README.md#nope")
    fork.commit_change(
        "src/op.cc", "return 2", "return 3", "[C] c", fixes="https://example.org/x; owner/r#12"
    )
    assert fork.run("export") == 0
    problems = check.run(fork.root, None).problems
    assert any("a.patch: Fixes: 'BUGS.md section 2' is neither a file" in p for p in problems)
    assert any(
        "b.patch: Fixes: 'patches/README.md#nope': patches/README.md has no section" in p
        for p in problems
    )
    assert not any(p.startswith("c.patch") for p in problems), problems


def test_each_patch_applies_after_its_declared_dependencies(fork: Fork) -> None:
    fork.commit_change("src/op.cc", "return 1", "return 2", "[A] First")
    fork.commit_change("src/op.cc", "return 2", "return 3", "[B] Builds on the first")
    assert fork.run("export") == 0
    report = check.run(fork.root, None, fork.checkout)
    (problem,) = report.problems
    assert problem.startswith(
        "builds-on-the-first.patch does not apply on the pin after its "
        "Depends-On patches alone (none)"
    )
    # declared, it stages
    fork.tvm("reset", "-q", "--hard", "HEAD~1")
    fork.commit_change(
        "src/op.cc",
        "return 2",
        "return 3",
        "[B] Builds on the first",
        extra="Depends-On: first.patch\n",
    )
    assert fork.run("export") == 0
    report = check.run(fork.root, None, fork.checkout)
    assert report.problems == []
    assert any("applies on the pin after its Depends-On patches alone" in n for n in report.notes)


def test_a_test_node_that_exists_is_accepted(exported: Fork) -> None:
    p = exported.root / "patches/fix-op3.patch"
    node = "tests/regression/test_example.py::test_x"
    p.write_text(p.read_text().replace("tests/regression/test_example.py", node))
    assert check.run(exported.root, None).problems == []


@pytest.mark.parametrize(
    "subject", ["[Relax] Seven ops that returned wrong results", "[ONNX] 3 fixes of the importer"]
)
def test_a_patch_named_by_a_count_is_refused(exported: Fork, subject: str) -> None:
    """A count in the subject or file name goes stale with the next fix added to the patch."""
    p = exported.root / "patches/fix-op3.patch"
    p.write_text(p.read_text().replace("[Relax] Fix op3", subject))
    problems = check.run(exported.root, None).problems
    assert len(problems) == 1 and "the subject starts with a count" in problems[0]


@pytest.mark.parametrize(
    "subject, expected",
    [
        ("[Relax][Frontend][Torch] Fix op3", "write [Relax][PyTorch]"),
        ("[TOPI][Relax][Frontend][ONNX] Fix op3", "write [Relax][ONNX]"),
        ("[TIR][CPU] Fix op3", "write [TIRx]"),
        ("[Dlight][GPU] Fix op3", "write [DLight]"),
        ("Fix op3", "does not start with upstream's component tags"),
    ],
)
def test_a_title_in_an_outdated_form_is_refused(
    exported: Fork, subject: str, expected: str
) -> None:
    """Titles as upstream's log writes them today ([Relax][PyTorch], [TIRx])."""
    p = exported.root / "patches/fix-op3.patch"
    p.write_text(p.read_text().replace("[Relax] Fix op3", subject))
    problems = check.run(exported.root, None).problems
    assert len(problems) == 1 and expected in problems[0], problems


def test_a_patch_of_one_importer_is_titled_by_it(fork: Fork) -> None:
    path = "python/tvm/relax/frontend/torch/translator.py"
    fork.commit_change(path, "", "x = 1\n", "[Relax] Fix the importer")
    fork.commit_change(path, "x = 1", "x = 2", "[Relax][PyTorch] Fix it again")
    assert fork.run("export") == 0
    problems = check.run(fork.root, None).problems
    assert problems == [
        "fix-the-importer.patch: it changes only python/tvm/relax/frontend/torch/: its subject "
        "starts with [Relax][PyTorch]"
    ], problems


def test_a_new_per_op_onnx_test_file_is_refused(fork: Fork) -> None:
    """Upstream keeps the ONNX importer's tests in one file: a patch adds to it, not a new one."""
    fork.commit_change(
        "tests/python/relax/test_frontend_onnx_mod.py",
        "",
        "def test_mod():\n    pass\n",
        "[Relax][ONNX] Test Mod on its own",
    )
    fork.commit_change(
        "tests/python/relax/test_frontend_onnx.py",
        "",
        "def test_mod():\n    pass\n",
        "[Relax][ONNX] Test Mod beside the others",
    )
    assert fork.run("export") == 0
    problems = check.run(fork.root, None).problems
    assert problems == [
        "test-mod-on-its-own.patch: it adds tests/python/relax/test_frontend_onnx_mod.py: "
        "upstream keeps these tests in tests/python/relax/test_frontend_onnx.py; put them "
        "beside the op's own there"
    ], problems
