"""The archkit/v1 spec: model, loader with source locations, and JSON Schema export."""

from archkit.spec.loader import LoadResult, SourceMap, file_of, load_file, load_text, source_of
from archkit.spec.model import Spec

__all__ = ["LoadResult", "SourceMap", "Spec", "file_of", "load_file", "load_text", "source_of"]
