"""Operator declarations built from the compute language."""

from .pad import pad

__all__ = ["pad"]
