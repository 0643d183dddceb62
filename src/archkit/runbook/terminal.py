"""Spec text for a terminal, shown as it is: control, bidi and invisible characters escaped.

A check command is run exactly as the spec writes it, so the terminal must show exactly
that. Printed raw, a carriage return rewinds the line, an ANSI escape sequence recolours,
hides or moves the text, and a right-to-left override (U+202E) reorders it: what the
on-call engineer reads would differ from what `--run` executes. Every such character is
shown as a Python-style escape (`\\r`, `\\x1b`, `\\u202e`) and the line is flagged.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["has_hidden", "shown"]

# C0/C1 controls, DEL, and Unicode's format (Cf: bidi controls, zero-width characters,
# the BOM), line/paragraph separators (Zl, Zp) and surrogates (Cs); tested per character
# only where the fast pattern finds a candidate.
_CANDIDATE = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff]|[\U000110bd\U0001d173-\U0001d17a\U000e0001-\U000e007f]"
)
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs"}


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch == "\r":
        return "\\r"
    if ch == "\n":
        return "\\n"
    if ch == "\t":
        return "\\t"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def has_hidden(text: str, keep: str = "") -> bool:
    """Whether `text` holds a character `shown` would escape (other than those in `keep`)."""
    return any(
        ch not in keep and unicodedata.category(ch) in _HIDDEN_CATEGORIES for ch in _CANDIDATE.findall(text)
    )


def shown(text: str, keep: str = "") -> str:
    """`text` with every control, bidi and invisible character escaped, except those in `keep`
    (e.g. "\\n\\t" for a command's multi-line output)."""

    def sub(m: re.Match[str]) -> str:
        ch = m.group(0)
        if ch in keep or unicodedata.category(ch) not in _HIDDEN_CATEGORIES:
            return ch
        return _escape(ch)

    return _CANDIDATE.sub(sub, text)
