"""The one subprocess helper: run a command (captured, or streamed to a log), fail with its
output tail."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tvmfork.errors import ProcessError

TAIL_LINES = 40


def _fmt(cmd: Sequence[str | Path]) -> str:
    return shlex.join(str(c) for c in cmd)


def _with_environ(env: Mapping[str, str] | None) -> dict[str, str]:
    """The current environment with `env`'s entries added."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return full_env


def run(
    cmd: Sequence[str | Path],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    capture: bool = True,
    echo: bool = False,
    input: str | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `cmd`; with `check`, a non-zero exit raises ProcessError with the output tail.

    `capture` collects stdout and stderr together (text); otherwise they stream to the
    terminal. `env` entries are added to the current environment. Past `timeout` seconds the
    command is killed and Timeout raised (whatever `check` says), with its output so far.
    """
    if echo:
        print(f"+ {_fmt(cmd)}", file=sys.stderr, flush=True)
    full_env = _with_environ(env) if env is not None else None
    try:
        proc = subprocess.run(
            [str(c) for c in cmd],
            cwd=cwd,
            env=full_env,
            text=True,
            input=input,
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.STDOUT if capture else None,
            check=False,
            timeout=timeout,
        )
    except FileNotFoundError as exc:
        raise ProcessError(_not_found(cmd, cwd)) from exc
    except subprocess.TimeoutExpired as exc:
        out = exc.output.decode(errors="replace") if isinstance(exc.output, bytes) else exc.output
        raise Timeout(cmd, timeout or 0, out or "") from exc
    if check and proc.returncode != 0:
        raise ProcessError(failure_message(cmd, proc.returncode, proc.stdout or "", cwd))
    return proc


class Timeout(ProcessError):
    """A command ran past its time limit and was killed."""

    def __init__(self, cmd: Sequence[str | Path], seconds: float, output: str) -> None:
        self.tail = "\n".join(output.rstrip().splitlines()[-TAIL_LINES:])
        super().__init__(f"command ran past {seconds:.0f} s and was stopped: {_fmt(cmd)}")


def _not_found(cmd: Sequence[str | Path], cwd: Path | None) -> str:
    """Why Popen found nothing: a missing working directory reads the same as a missing
    program (ENOENT), and a user needs to know which."""
    if cwd is not None and not Path(cwd).is_dir():
        return f"folder {cwd} does not exist (needed to run: {_fmt(cmd)})"
    return f"command not found: {cmd[0]} (needed for: {_fmt(cmd)})"


def failure_message(
    cmd: Sequence[str | Path], code: int, output: str, cwd: Path | None = None
) -> str:
    lines = output.rstrip().splitlines()[-TAIL_LINES:]
    where = f" (in {cwd})" if cwd else ""
    body = "\n".join("    " + line for line in lines) or "    (no output)"
    return f"command failed with exit code {code}{where}:\n  {_fmt(cmd)}\n{body}"


def spawn(
    cmd: Sequence[str | Path], *, cwd: Path, env: Mapping[str, str], stderr_log: Path
) -> subprocess.Popen[str]:
    """Start `cmd` as a line-protocol child (text pipes on stdin and stdout, stderr to
    `stderr_log`) in a session of its own, so that it can be stopped as a group."""
    full_env = _with_environ(env)
    try:
        with stderr_log.open("w") as err:
            return subprocess.Popen(
                [str(c) for c in cmd],
                cwd=cwd,
                env=full_env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                start_new_session=True,
            )
    except FileNotFoundError as exc:
        raise ProcessError(_not_found(cmd, cwd)) from exc


def stream(
    cmd: Sequence[str | Path],
    log: Path,
    on_line: Callable[[str], None],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run `cmd` with its output (stdout and stderr) appended to `log` line by line, each line
    also handed to `on_line`; a non-zero exit raises ProcessError with the tail and the log."""
    full_env = _with_environ(env)
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8", errors="replace") as out:
        out.write(f"+ {_fmt(cmd)}\n")
        out.flush()
        try:
            child = subprocess.Popen(
                [str(c) for c in cmd],
                cwd=cwd,
                env=full_env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                bufsize=1,
                start_new_session=True,  # its own process group: stopped as a whole
            )
        except FileNotFoundError as exc:
            raise ProcessError(_not_found(cmd, cwd)) from exc
        assert child.stdout is not None
        try:
            for line in child.stdout:
                out.write(line)
                tail.append(line.rstrip("\n"))
                on_line(line.rstrip("\n"))
            code = child.wait()
        except BaseException:  # Ctrl-C, SIGTERM (see cli.main): stop the whole build
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            raise
    if code != 0:
        msg = failure_message(cmd, code, "\n".join(tail), cwd)
        raise ProcessError(f"{msg}\n  full log: {log}")
