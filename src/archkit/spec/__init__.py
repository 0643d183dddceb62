"""The archkit/v1 spec: model, loader with source locations, and JSON Schema export."""

from archkit.spec.loader import LoadResult, file_of, load_file, load_text, source_of
from archkit.spec.model import Spec
from archkit.spec.sourcemap import SourceMap

__all__ = ["LoadResult", "SourceMap", "Spec", "file_of", "load_file", "load_text", "source_of"]
