"""Progress on stderr: a self-overwriting line on a terminal after a second, nothing otherwise."""

from __future__ import annotations

import io
import time

from archkit.cli.output import ticking


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_elapsed_time_then_a_cleared_line():
    term = _Terminal()
    with ticking("checking 1 spec(s)", term):
        time.sleep(1.4)
    text = term.getvalue()
    assert "\r\033[Karchkit: checking 1 spec(s) … 1 s" in text and text.endswith("\r\033[K")


def test_quiet_when_not_a_terminal_or_when_fast():
    pipe = io.StringIO()
    with ticking("x", pipe):
        time.sleep(1.2)
    assert pipe.getvalue() == ""
    term = _Terminal()
    with ticking("x", term):
        pass
    assert term.getvalue() == ""
