"""`python -m hivedlab`: the CLI, with a Ctrl-C at any instant said in one line, never a traceback."""

import signal
import sys

from hivedlab.basics.errors import EXIT_INTERRUPTED, caused_by_interrupt, interrupted_before_start

try:
    from hivedlab.cli.main import main
except BaseException as exc:  # a Ctrl-C while Python loads the CLI: nothing has run yet
    if not caused_by_interrupt(exc):
        raise
    print(interrupted_before_start(sys.argv[1:]), file=sys.stderr)
    raise SystemExit(EXIT_INTERRUPTED) from None

code = main()
signal.signal(signal.SIGINT, signal.SIG_IGN)  # done: a late Ctrl-C cannot turn the exit into a traceback
raise SystemExit(code)
