"""The one error hierarchy of tvmfork.

Every failure the user can act on is a `TvmforkError`; each class carries its own exit code,
and the message says what to do next. `cli.main` is the only place that catches TvmforkError
itself (to print the message and exit with the code). Elsewhere a specific subclass is caught
only where that error is the function's result, and the function says so: `check` turns
errors into the problems it lists, `wheel.build.source_unavailable` gives the reason an `auto`
build falls back to an overlay, `series.load_or_none` lets `export` rewrite a broken series.
"""

from __future__ import annotations


class TvmforkError(Exception):
    """Base class: a failure with a message meant for the user."""

    exit_code = 1


class UsageError(TvmforkError):
    """Bad command line or settings (unknown key, wrong value)."""

    exit_code = 2


class ProcessError(TvmforkError):
    """A subprocess failed; the message holds the command, its code and output tail."""

    exit_code = 3


class SourceError(TvmforkError):
    """A TVM source (checkout, commit, submodule) is missing, dirty or not the pin."""

    exit_code = 4


class PatchError(TvmforkError):
    """The series is unsound, or a patch does not apply."""

    exit_code = 5


class IntegrityError(TvmforkError):
    """A downloaded or cached artifact does not match its recorded hash."""

    exit_code = 6


class ToolchainError(TvmforkError):
    """A required tool (git, cmake, llvm-config, nvcc, ...) is missing or too old."""

    exit_code = 7


class VerifyError(TvmforkError):
    """A regression test did not show what it must (fail on stock, pass on the fork)."""

    exit_code = 8
