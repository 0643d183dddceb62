"""Generators of the project's own documentation pages that are derived from the code."""
