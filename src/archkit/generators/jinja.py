"""The one Jinja environment: strict, newline-keeping, with escaping filters per target language."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment


def builtin_templates_dir() -> Path:
    """Templates ship in the wheel as archkit/_generators; an editable install uses the repo's."""
    packaged = resources.files("archkit") / "_generators"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[3] / "generators"


# ---- escaping filters: any string from a spec must stay inert in each target language


def plantuml_label(value: Any) -> str:
    """Text safe inside a PlantUML activity label or note (no directives, no line breaks)."""
    s = str(value)
    s = s.replace("\\", "\\\\").replace("\r", "").replace("\n", "\\n")
    # creole/markup and preprocessor characters lose their meaning with a zero-width escape
    s = s.replace("@", "@\u200b").replace("!", "!\u200b")
    # look-alikes that DejaVu Sans (PlantUML's font here) has; full-width forms render as boxes
    s = s.replace(";", "\u037e").replace("|", "\u2758")
    s = s.replace("<", "\u2039").replace(">", "\u203a").replace("[", "\u2772").replace("]", "\u2773")
    s = s.replace("{", "\u2774").replace("}", "\u2775")
    s = re.sub(r"(\*\*|//|__|~~|\"\"|--)", lambda m: m.group(0)[0] + "\u200b" + m.group(0)[1], s)
    return s


def promql_label_value(value: Any) -> str:
    """A PromQL label value body (inside double quotes)."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class PromTemplate(str):
    """Text archkit means as a Prometheus (Go text/template) template, e.g. `{{ $value }}`.

    Prometheus expands an alerting rule's labels and annotations as Go templates when the alert
    fires, so any other text that reaches them is made literal by `prom_literal`; a
    `PromTemplate` passes through it unchanged. Build one with `prom_template`.
    """


def prom_literal(value: Any) -> str:
    """Text shown literally by Prometheus' template expansion of alert labels and annotations.

    Go templates start an action only at `{{` (text/template's default delimiters; a lone `{`,
    `}}` or `$` is plain text), so every `{{` becomes the action `{{ "{{" }}`, which prints the
    two braces: `promtool check rules` accepts the result and the fired alert shows the text as
    written (tests/security/test_prometheus_templates.py proves it with `promtool test rules`).
    """
    if isinstance(value, PromTemplate):
        return str(value)
    return str(value).replace("{{", '{{ "{{" }}')


def prom_template(*parts: str) -> PromTemplate:
    """Concatenate text and `PromTemplate` parts: plain `str` parts literal, templates kept.

    In a plain part every `{` is escaped (not only `{{`), so that no `{{` forms across a seam:
    `"a{"` followed by `"{{ $value }}"` would otherwise open an action at its first brace.
    """
    return PromTemplate(
        "".join(str(p) if isinstance(p, PromTemplate) else str(p).replace("{", '{{ "{" }}') for p in parts)
    )


def python_str(value: Any) -> str:
    """A Python string literal."""
    return repr(str(value))


def yaml_scalar(value: Any) -> str:
    """A YAML scalar: JSON is a subset of YAML, so a JSON string is always a safe scalar."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False)


def dot_label(value: Any) -> str:
    """A Graphviz double-quoted string body."""
    s = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return s.replace("\r", "").replace("\n", "\\n")


def md_text(value: Any) -> str:
    """Markdown-inert inline text (table cells too)."""
    s = str(value).replace("\r", "").replace("\n", " ")
    s = re.sub(r"([\\`*_{}\[\]<>()#+!|~])", r"\\\1", s)
    return s


FILTERS = {
    "plantuml": plantuml_label,
    "promql": promql_label_value,
    "promliteral": prom_literal,
    "pystr": python_str,
    "yaml": yaml_scalar,
    "dot": dot_label,
    "md": md_text,
    "tojson_sorted": lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False),
}


@lru_cache(maxsize=8)
def _env(user_dir: str | None) -> jinja2.Environment:
    loaders: list[jinja2.BaseLoader] = []
    if user_dir:
        loaders.append(jinja2.FileSystemLoader(user_dir))
    loaders.append(jinja2.FileSystemLoader(str(builtin_templates_dir())))
    cls = SandboxedEnvironment if user_dir else jinja2.Environment  # user templates are untrusted
    env = cls(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html", "htm", "svg", "xml"), default_for_string=False
        ),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    return env


def environment(user_dir: Path | None = None) -> jinja2.Environment:
    """The shared environment; `user_dir` templates override built-in ones of the same name."""
    return _env(str(user_dir) if user_dir else None)


def render(template: str, user_dir: Path | None = None, **values: Any) -> str:
    """Render `NAME/file.j2` with `values`."""
    return environment(user_dir).get_template(template).render(**values)
