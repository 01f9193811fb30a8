"""Tuning: tasks, the searcher and its measuring workers, the JSON-lines log, and using the
results (``apply_best`` / ``instantiate``). Templates are registered by name
(``register_template``): a task and a log record name a registered template, never a module.
Knob spaces (``Config``) are declared by the templates in ``tensorsched.ops.space`` and
re-exported here."""

from ..ops.space import Config, ConfigError, split_axis
from ..ops.templates import TemplateError, register_template
from .dispatch import apply_best, best_config, instantiate
from .log import best_records, export_csv, read_log
from .task import Task
from .tuner import early_filter, tune

__all__ = [
    "Config",
    "ConfigError",
    "split_axis",
    "register_template",
    "TemplateError",
    "Task",
    "tune",
    "early_filter",
    "apply_best",
    "instantiate",
    "best_config",
    "read_log",
    "export_csv",
    "best_records",
]
