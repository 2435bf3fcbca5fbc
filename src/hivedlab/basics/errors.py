"""Exit codes and the one exception type the CLI turns into a one-line message."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1  # validation errors, inconsistent verdicts, failed checks
EXIT_USAGE = 2  # bad arguments, unreadable or unusable input
EXIT_INTERRUPTED = 130


class HivedlabError(Exception):
    """A user-facing failure: printed as one line, never as a traceback."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code
