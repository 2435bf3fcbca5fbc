"""The terminal view of a real run: one progress line per step and a table of jobs, tasks, nodes and states."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.live import Live
from rich.table import Table

STATE_STYLE = {"RUNNING": "green", "WAITING": "yellow", "SUCCEEDED": "cyan", "FAILED": "red", "STOPPED": "magenta",
               "STOPPING": "magenta", "UNKNOWN": "dim"}


@dataclass(frozen=True)
class JobRow:
    user: str
    job_name: str
    state: str
    retries: int
    tasks: tuple[tuple[str, str, str], ...]  # (task, node, state)
    waiting_reason: str = ""


def jobs_table(rows: Sequence[JobRow], title: str) -> Table:
    table = Table(title=title, expand=False)
    for column in ("user", "job", "state", "retries", "tasks (node: state)", "scheduler says"):
        table.add_column(column, overflow="fold")
    for row in rows:
        style = STATE_STYLE.get(row.state, "")
        tasks = ", ".join(f"{task}@{node or '-'}: {state}" for task, node, state in row.tasks) or "-"
        table.add_row(row.user, row.job_name, f"[{style}]{row.state}[/]" if style else row.state, str(row.retries),
                      tasks, row.waiting_reason[:80])
    return table


class LiveView:
    """A rich Live table refreshed by the backend while it waits; plain lines when the output is not a terminal."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._live: Live | None = None
        self._title = "hivedlab: real cluster"

    def step(self, text: str) -> None:
        self.console.print(f"[bold]>[/] {text}")

    def show(self, rows: Sequence[JobRow], title: str | None = None) -> None:
        self._title = title or self._title
        table = jobs_table(rows, self._title)
        if not self.console.is_terminal:
            return
        if self._live is None:
            self._live = Live(table, console=self.console, auto_refresh=False, transient=False)
            self._live.start()
        self._live.update(table, refresh=True)

    def pause(self) -> None:
        """End the live table (before asking the user something, or when a step ends)."""
        if self._live is not None:
            self._live.stop()
            self._live = None

    def close(self) -> None:
        self.pause()
