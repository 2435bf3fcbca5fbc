"""Exit codes and the exception type the CLI turns into a one-line message (`BilingualError`: one it can say in
either language).

`run`, `check` and the numbered lab scripts share one table (`EXIT_TABLE`, printed in their `--help`), so that a
course's CI can tell "the lab did not run" (2, 130) from "the lab ran and is right" (0)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from hivedlab.basics.text import Text

EXIT_OK = 0
EXIT_FINDINGS = 1  # validation errors, inconsistent verdicts, failed checks
EXIT_USAGE = 2  # bad arguments, unreadable or unusable input
EXIT_INCONCLUSIVE = 3  # the lab ran; some verdict is inconclusive and none inconsistent
EXIT_INTERRUPTED = 130

EXIT_TABLE = (
    "Exit status: 0 every verdict consistent; 1 some verdict inconsistent; 3 some inconclusive, none inconsistent; "
    "2 bad arguments or unreadable input (the lab did not run); 130 interrupted (Ctrl-C).\n"
    "退出码：0 全部符合；1 有不符合；3 有无法判断（没有不符合）；2 参数错误或输入无法读取（实验没有运行）；130 被中断。"
)


def verdict_exit(inconsistent: bool, inconclusive: bool) -> int:
    """`EXIT_TABLE`'s precedence: inconsistent (1) before inconclusive (3) before all consistent (0)."""
    return EXIT_FINDINGS if inconsistent else EXIT_INCONCLUSIVE if inconclusive else EXIT_OK


class HivedlabError(Exception):
    """A user-facing failure: printed as one line, never as a traceback."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    def said_in(self, lang: str) -> str:
        """The line in `lang`; this one exists only in English."""
        return str(self)


class BilingualError(HivedlabError):
    """A user-facing failure said in both languages: its message (what `str()`, logs and callers that match on it
    see) is `said`'s English; a command with `--lang` prints `said_in(lang)`."""

    def __init__(self, said: Text, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(said.en, exit_code)
        self.said = said

    def said_in(self, lang: str) -> str:
        return self.said.get(lang)


def caused_by_interrupt(exc: BaseException) -> bool:
    """Whether a Ctrl-C is behind `exc`: a KeyboardInterrupt that landed inside a library's import comes out wrapped
    (`RuntimeError: Error calling __set_name__ …` from a class body, Python before 3.12) with it as the cause."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        if isinstance(found, KeyboardInterrupt):
            return True
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return False


def interrupted_before_start(argv: Sequence[str]) -> str:
    """The line for a Ctrl-C that landed before a command took over (Python loading it, its options): nothing ran,
    so the next step is the same command."""
    again = shlex.join(["hivedlab", *argv])
    return f"hivedlab: interrupted before anything ran; run `{again}` again / 已中断，尚未运行：请重新运行 `{again}`"
