"""`archkit check` shows spec text with bidi, control and ANSI characters escaped."""

from __future__ import annotations

from typer.testing import CliRunner

from archkit.cli import _load_commands, app


def test_check_escapes_bidi_and_ansi_in_spec_text(tmp_path):
    spec = tmp_path / "s.yaml"
    # YAML's own escapes put a right-to-left override and an ANSI clear-screen into the key
    spec.write_text(
        'apiVersion: archkit/v1\nmetadata: {name: t}\n"bad\\u202ekey\\e[2J": 1\n', encoding="utf-8"
    )
    _load_commands()
    out = CliRunner().invoke(app, ["check", str(spec)]).output
    assert "AK101" in out
    assert "\u202e" not in out and "\x1b" not in out
    assert "\\u202e" in out and "\\x1b" in out
