"""Tuning: knob spaces of schedule templates (``space.py``)."""
from .space import Config, ConfigError, split_axis

__all__ = ["Config", "ConfigError", "split_axis"]
