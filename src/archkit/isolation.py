"""One error isolation for every plug-in: a rule, a generator, a verify source or a verify check that raises.

`isolated(kind, name, run)` runs one plug-in and returns its result, or a `Failure` naming the
plug-in's kind and name and the error, so that the caller reports it as one located finding
and runs the other plug-ins:

- a rule (`checks.registry.run_rules`) and a generator (`render.generate`): an AK199 error
  located on the spec (`checks.registry.internal_error`); a generator's other files are still
  written;
- a verify source (`verify.run_inputs`): one *unknown* finding under the source's first code;
- a verify check (`verify.source_checks.SourceContext.guarded`, and per Kubernetes object
  `verify.kube.context.KubeContext.guarded`): one *unknown* finding under the check's own code.
  A check catches only what reading a malformed answer raises (`MALFORMED`): a transport error
  is the source's "stopped answering" finding, and anything else reaches the source's guard.

What a plug-in must not hide passes through (`passes`): a generator's `InputError` (a template
folder or an option the user got wrong) still exits 2, as `errors.py` says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

Errors = tuple[type[BaseException], ...]

ANY: Errors = (Exception,)
# What reading a malformed answer raises (a field of the wrong type, a missing key).
MALFORMED: Errors = (AttributeError, TypeError, ValueError, KeyError, IndexError)
# A finding is one line: the error's text, whitespace collapsed, cut at this many characters.
DETAIL_CHARS = 200


@dataclass(frozen=True)
class Failure:
    """A plug-in that raised: its kind ("rule", "generator", "verify source", "verify check"), name, error."""

    kind: str
    name: str
    error: BaseException

    @property
    def detail(self) -> str:
        """`Type: text` of the error, on one line."""
        text = " ".join(str(self.error).split())[:DETAIL_CHARS]
        return f"{type(self.error).__name__}: {text}"

    @property
    def message(self) -> str:
        return f"internal error in {self.kind} {self.name}: {self.detail}"


def isolated(
    kind: str,
    name: str,
    run: Callable[[], T],
    *,
    catch: Errors = ANY,
    passes: Errors = (),
) -> T | Failure:
    """`run()`, or the `Failure` when it raises one of `catch` (and none of `passes`)."""
    try:
        return run()
    except passes:
        raise
    except catch as exc:
        return Failure(kind, name, exc)
