"""The venv cache is shared between tvmfork commands: a rebuild never pulls a venv out from
under another command that is using it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tvmfork import venvs
from tvmfork.errors import UsageError

pytestmark = pytest.mark.unit

_HOLD = """
import fcntl, sys, time
fh = open(sys.argv[1], "a+")
fcntl.flock(fh, fcntl.LOCK_SH)
print("held", flush=True)
time.sleep(60)
"""

_TRY_EXCLUSIVE = """
import fcntl, sys
fh = open(sys.argv[1], "a+")
try:
    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("free")
except BlockingIOError:
    print("held")
"""


def _fake_create(venv: Path, requirements, *, python, deps_venv) -> None:
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    (venv / "created").write_text(" ".join(requirements))


def _other_command_using(lock_file: Path) -> subprocess.Popen:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(lock_file)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_rebuild_of_a_venv_in_use_stops_with_its_name(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(venvs, "_create", _fake_create)
    venv = tmp_path / "fork"
    venv.mkdir()
    (venv / venvs.MARKER).write_text(json.dumps({"requirements": ["old"], "deps": "", "fp": ""}))
    holder = _other_command_using(tmp_path / "fork.lock")
    try:
        with pytest.raises(UsageError, match="another tvmfork command is using it") as err:
            venvs.ensure(venv, ["new"], python=sys.executable)
        assert str(venv) in str(err.value)
        assert not (venv / "created").exists()  # nothing touched
        # unchanged requirements: used as it is, alongside the other command
        assert venvs.ensure(venv, ["old"], python=sys.executable) == venvs.python_of(venv)
    finally:
        holder.kill()
        holder.wait()


def test_a_venv_this_command_uses_stays_locked_until_it_exits(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(venvs, "_create", _fake_create)
    venv = tmp_path / "stock"
    assert venvs.ensure(venv, ["a"], python=sys.executable) == venvs.python_of(venv)
    assert (venv / "created").read_text() == "a"
    # rebuilt in the same process (other requirements): its own shared lock does not block it
    venvs.ensure(venv, ["b"], python=sys.executable)
    assert (venv / "created").read_text() == "b"
    probe = [sys.executable, "-c", _TRY_EXCLUSIVE, str(tmp_path / "stock.lock")]
    started = time.monotonic()
    assert subprocess.run(probe, capture_output=True, text=True).stdout.strip() == "held"
    assert time.monotonic() - started < 30


def test_creation_shows_what_pip_installs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A first `make test` spends minutes in pip: the terminal says what it installs."""
    import zipfile

    wheel = tmp_path / "tiny-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("tiny.py", "X = 1\n")
        zf.writestr(
            "tiny-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: tiny\nVersion: 1.0\n"
        )
        zf.writestr(
            "tiny-1.0.dist-info/WHEEL",
            "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr("tiny-1.0.dist-info/RECORD", "")
    py = venvs.ensure(tmp_path / "v", [str(wheel)], python=sys.executable)
    err = capsys.readouterr().err
    assert "==> venv v:" in err and "pip install" in err
    assert "Successfully installed tiny-1.0" in err and "done in" in err
    assert subprocess.run([str(py), "-c", "import tiny"], check=False).returncode == 0
    venvs.ensure(tmp_path / "v", [str(wheel)], python=sys.executable)  # unchanged: reused
    assert capsys.readouterr().err == ""


def test_with_takes_requirements_and_requirement_files(tmp_path: Path) -> None:
    reqs = tmp_path / "extra.txt"
    reqs.write_text("# what my cases import\neinops==0.8.2\n\ntimm  # a comment\n")
    assert venvs.with_packages(["tabulate", str(reqs)]) == ["tabulate", "einops==0.8.2", "timm"]
    with pytest.raises(UsageError, match="no such requirements file"):
        venvs.with_packages([str(tmp_path / "missing.txt")])
