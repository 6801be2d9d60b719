"""The process side of the line protocol: a serving process's next line within a deadline,
and the process stopped with everything it started. Shared by the runner here
(`runner.Worker`) and a bundle's runner on its device (`bundle_runner.Side`), which has this
package and not tvmfork. Standard library only."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time


def read_line(proc: subprocess.Popen[bytes], buf: bytearray, deadline: float) -> bytes | None:
    """The next line `proc` writes on its stdout (without the newline; what follows stays in
    `buf`); None at EOF or when the deadline (time.monotonic) passes."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            buf += chunk
    end = buf.index(b"\n")
    line = bytes(buf[:end])
    del buf[: end + 1]
    return line


def stop(proc: subprocess.Popen[bytes]) -> int:
    """`proc` and its process group (it was started in a session of its own) killed if still
    running, waited for, its pipes closed; its exit code."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    code = proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()
    return code
