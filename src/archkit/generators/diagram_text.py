"""Text helpers shared by the diagram generators: clean, wrap, format numbers, escape for DOT/HTML."""

from __future__ import annotations

import re
import textwrap
from typing import Any

# C0/C1 control characters (except tab and newline), lone surrogates, non-characters and
# invisible format characters can make renderers fail (Graphviz's XML-ish HTML labels; a
# U+FEFF crashes PlantUML 1.2026.8's text layout): they become U+FFFD.
_BAD = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff\u200c-\u200f\u2028-\u202e\u2060-\u206f\ufeff]"
)


def clean(value: Any) -> str:
    """A spec string made safe to hand to any renderer: no control characters, no surrogates."""
    return _BAD.sub("\ufffd", str(value)).replace("\t", " ")


def one_line(value: Any, limit: int = 200) -> str:
    s = " ".join(clean(value).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def wrap(value: Any, width: int = 38, limit: int = 240) -> list[str]:
    """One-line text wrapped at word boundaries into lines of about `width` characters.

    A word longer than `width` stays whole on its own line (a metric name cut mid-word reads as
    two names); `limit` bounds the whole text, so a line is never longer than that.
    """
    return textwrap.wrap(one_line(value, limit), width, break_long_words=False, break_on_hyphens=False) or [
        ""
    ]


def html(value: Any) -> str:
    """Text for a Graphviz HTML-like label (XML escaping; entities for quotes and brackets).

    Never empty: Graphviz 2.43 rejects empty markup such as `<B></B>` as a syntax error.
    """
    s = clean(value)
    if not s.strip():
        return "&#160;"
    return (
        s.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
        .replace("]", "&#93;")
        .replace("[", "&#91;")
    )


def html_lines(value: Any, width: int = 38, limit: int = 240) -> str:
    return "<BR/>".join(html(line) for line in wrap(value, width, limit))


def dq(value: Any) -> str:
    """A Graphviz double-quoted string (quotes included): backslashes and quotes escaped."""
    s = one_line(value, 400).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{s}"'


def num(value: float | None, unit: str = "", digits: int = 3) -> str:
    """A number without float noise: 12.0 -> '12', 0.000123 -> '0.000123'."""
    if value is None:
        return "–"
    if float(value).is_integer() and abs(value) < 1e15:
        s = str(int(value))
    else:
        s = f"{value:.{digits}g}"
    return f"{s} {unit}".strip() if unit else s


def pct(value: float | None) -> str:
    """A fraction as a percentage: 0.004 -> '0.4 %'."""
    if value is None:
        return "–"
    return f"{num(value * 100, digits=3)} %"
