"""archkit: architecture as code for AI services."""

__version__ = "0.1.0"
