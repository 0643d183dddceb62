"""Generators turn a spec into files: one module per generator, templates in generators/NAME/.

A generator is a function `(ctx: RenderContext) -> dict[relative_path, str | bytes]`
registered under a name; only `archkit.api` writes files. Third parties add generators
through the `archkit.generators` entry-point group.
"""

from archkit.generators.registry import (
    DuplicateGeneratorError,
    RenderContext,
    all_generators,
    register,
)

__all__ = ["DuplicateGeneratorError", "RenderContext", "all_generators", "register"]
