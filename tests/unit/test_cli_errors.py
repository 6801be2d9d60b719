"""Bad input on every verb: a clear message and the documented exit code, no traceback."""

from __future__ import annotations

import shutil

import pytest

from .conftest import PY_FILE, Fork

pytestmark = pytest.mark.unit


@pytest.fixture
def one(fork: Fork) -> Fork:
    fork.commit_change(PY_FILE, "return x + 3", "return x - 3", "[Relax] Fix op3")
    assert fork.run("export") == 0
    return fork


@pytest.mark.parametrize("verb", ["verify", "upstream-tests", "stage"])
def test_unknown_patch_names_the_known_ones(
    one: Fork, verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert one.run(verb, "no-such-patch") == 5
    err = capsys.readouterr().err
    assert "no patch named 'no-such-patch'" in err and "fix-op3" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "args",
    [("export", "--check"), ("export",), ("apply",), ("upstream-tests",), ("stage", "fix-op3")],
)
def test_missing_checkout_says_how_to_make_one(
    one: Fork, args: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.rmtree(one.checkout)
    assert one.run(*args) == 4
    err = capsys.readouterr().err
    assert f"no TVM checkout at {one.checkout}" in err and "tvmfork checkout" in err
    assert "command not found" not in err and "Traceback" not in err


def test_every_option_has_help() -> None:
    import argparse

    from tvmfork import cli

    missing = []
    for action in cli.parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                missing += [
                    f"{name} {a.option_strings or a.dest}"
                    for a in sub._actions
                    if not a.help and not isinstance(a, argparse._HelpAction)
                ]
    assert missing == []


@pytest.mark.parametrize("given", ["out/bench/report.md", "out/bench/results.jsonl"])
def test_conformance_report_is_a_folder_not_a_file(
    one: Fork, given: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--report out/x/report.md` once made a folder named report.md; it is refused before
    any venv is built, with the folder to give instead."""
    assert one.run("conformance", "ci", "--report", given) == 2
    err = capsys.readouterr().err
    assert f"--report {given}: give a folder" in err and "e.g. --report out/bench" in err
    assert not (one.root / given).exists() and "Traceback" not in err
