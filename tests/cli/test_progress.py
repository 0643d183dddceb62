"""Progress on stderr: a self-overwriting line on a terminal after a second, nothing otherwise."""

from __future__ import annotations

import io
import re
import time

from archkit.cli.output import ticking


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_elapsed_time_then_a_cleared_line():
    term = _Terminal()
    start = time.monotonic()
    with ticking("checking 1 spec(s)", term):
        # wait for the first line rather than a fixed pause: on a busy machine (the parallel
        # test pass) the ticker thread can wake late, and a late line is still a right one
        while not term.getvalue() and time.monotonic() - start < 10:
            time.sleep(0.05)
        first = time.monotonic() - start
    text = term.getvalue()
    assert first >= 1.0  # quiet for the first second
    assert re.match(r"\r\033\[Karchkit: checking 1 spec\(s\) … [1-9]\d* s", text), text
    assert text.endswith("\r\033[K")


def test_quiet_when_not_a_terminal_or_when_fast():
    pipe = io.StringIO()
    with ticking("x", pipe):
        time.sleep(1.2)
    assert pipe.getvalue() == ""
    term = _Terminal()
    with ticking("x", term):
        pass
    assert term.getvalue() == ""
