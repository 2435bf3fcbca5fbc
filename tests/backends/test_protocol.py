"""The protocol's one Ctrl-C question, which the real backends ask before undoing what a run did."""

from __future__ import annotations

import pytest

from hivedlab.backends.protocol import confirm_on_interrupt


@pytest.mark.parametrize(("answer", "undo"), [("y", True), (" Yes\n", True), ("是", True), ("", False),
                                              ("n", False), ("yes please", False)])
def test_only_a_yes_undoes(answer: str, undo: bool) -> None:
    asked: list[str] = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        return answer

    assert confirm_on_interrupt(ask, True, "Stop the jobs this run submitted (a~b)", "是否停止？") is undo
    assert asked == ["\nStop the jobs this run submitted (a~b)? [y/N] / 是否停止？ "]


@pytest.mark.parametrize("raised", [EOFError, KeyboardInterrupt])
def test_an_end_of_input_or_a_second_ctrl_c_is_a_no(raised: type[BaseException]) -> None:
    def ask(prompt: str) -> str:
        raise raised

    assert confirm_on_interrupt(ask, True, "Remove it", "删除？") is False


def test_without_a_terminal_nothing_is_asked() -> None:
    def ask(prompt: str) -> str:
        raise AssertionError("asked without a terminal")

    assert confirm_on_interrupt(ask, False, "Remove it", "删除？") is False
