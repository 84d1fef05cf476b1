"""Profiles: the data model, file I/O with validation, and importers."""
from .model import Job, Op, Profile  # noqa: F401
