"""Tuning: knob spaces (``space``), tasks, the grid searcher, its log, and using the results.

``Config``/``split_axis`` load eagerly (templates need them); the rest on first use, because
they depend on the templates themselves.
"""
from .space import Config, ConfigError, split_axis

_LAZY = {
    "Task": ".task", "tune": ".tuner", "early_filter": ".tuner", "apply_best": ".dispatch",
    "instantiate": ".dispatch", "best_config": ".dispatch", "read_log": ".log",
    "export_csv": ".log", "best_records": ".log",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'tensorsched.tune' has no attribute '{name}'")


__all__ = ["Config", "ConfigError", "split_axis"] + list(_LAZY)
