"""`python -m hivedlab`: the CLI, with a Ctrl-C at any instant said in one line, never a traceback. Until the CLI
has loaded, only `sys` (always loaded) is used here, so that an interrupt inside any import is caught."""

import sys


def _interrupted(exc: BaseException) -> bool:
    """A Ctrl-C, or an error a Ctrl-C inside a library's import was wrapped in (`caused_by_interrupt`)."""
    found: BaseException | None = exc
    while found is not None:
        if isinstance(found, KeyboardInterrupt):
            return True
        found = found.__cause__ or found.__context__
    return False


_CUT: list[BaseException] = []  # Ctrl-Cs Python could not raise where they landed


def _unraisable(info: "sys.UnraisableHookArgs") -> None:
    """A Ctrl-C that Python could not raise where it landed (in a callback of its import machinery, say) would be
    printed as "Exception ignored …" with a traceback, and Python would go on: it is kept instead, and counts as an
    interrupt once the CLI has loaded (while the CLI runs it is lost, as Python loses it)."""
    if isinstance(info.exc_value, KeyboardInterrupt):
        _CUT.append(info.exc_value)
    else:
        sys.__unraisablehook__(info)


sys.unraisablehook = _unraisable
try:
    from hivedlab.cli.main import main

    if _CUT:
        raise _CUT[0]
except BaseException as exc:  # a Ctrl-C while Python loads the CLI: nothing has run yet
    if not _interrupted(exc):
        raise
    again = " ".join(["hivedlab", *sys.argv[1:]])
    print(f"hivedlab: interrupted before anything ran; run `{again}` again / 已中断，尚未运行：请重新运行 `{again}`",
          file=sys.stderr)
    raise SystemExit(130) from None

code = main()
try:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # done: a late Ctrl-C cannot turn the exit into a traceback
except KeyboardInterrupt:
    pass
from hivedlab.basics.errors import EXIT_INTERRUPTED  # noqa: E402  (loaded with the CLI)

if code == EXIT_INTERRUPTED:  # interrupted, said, every file closed: a library's state a Ctrl-C cut short is not
    import os  # torn down (Python's teardown after such a Ctrl-C once aborted under load)

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
raise SystemExit(code)
