"""AutoTVM templates and tasks: ``@autotvm.template(name)``, ``autotvm.get_config()``,
``autotvm.task.create(name, args, target)``, and the dispatch of a template called directly
(``apply_history_best`` or the fallback).

A template is registered as a tensorsched template of kind ``autotvm``: a task of it is plain
data (the template's name and its arguments, ``Task.args``), so the tuner, its workers and
its log handle it as any other task. A template defined in the main script reaches the
tuner's workers by value (pickled with cloudpickle when tuning starts, as TVM sends its
tasks to its workers), so a script that tunes at its top level is not run again by them.
"""

from __future__ import annotations

import functools
import logging
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import TensorschedError
from ...ops.space import Config
from ...ops.templates import AUTOTVM_TEMPLATES, TemplateError, register_template
from ...runtime.device import DeviceLimits, current_device
from ...runtime.target import Target, resolve_target
from ..log import ranked_configs, read_log
from ..task import Task as TsTask
from .space import AutotvmError, ConfigEntity, ConfigSpace, check_result

try:
    import cloudpickle
except ImportError:  # pragma: no cover - a dependency; the error says what to install
    cloudpickle = None

logger = logging.getLogger("autotvm")  # TVM's logger name: the tutorial sets its level

_FUNCS: dict[str, Callable[..., Any]] = {}  # template name -> the user's function
_RUNNING: list[ConfigEntity] = []  # the configs of the templates running now
_HISTORY: list[ApplyHistoryBest] = []  # the apply_history_best blocks entered
_WARNED: set[tuple[str, str]] = set()  # (device, workload) given a fallback already


# ---------------------------------------------------------------------------- templates


def template(task_name: str, func: Callable[..., Any] | None = None) -> Any:
    """Register ``func`` as the AutoTVM template ``task_name`` (a decorator without
    ``func``). The template declares a compute, creates a schedule, reads its knobs from
    ``autotvm.get_config()`` and returns ``(schedule, [tensors])``. Called directly, it builds
    the best config of an active ``apply_history_best`` for its arguments on the current
    target's device, else a fallback config (each knob's first candidate), logged once."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        _register(task_name, f)

        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                raise AutotvmError(
                    f"template '{task_name}' is called with keyword arguments "
                    f"({', '.join(kwargs)}): pass them by position, as its task's args"
                )
            return _dispatch(task_name, f, args)

        wrapper.template_name = task_name  # type: ignore[attr-defined]
        return wrapper

    if func is None:
        return decorate
    return decorate(func)


def _register(name: str, f: Callable[..., Any]) -> None:
    if not callable(f):
        raise AutotvmError(f"autotvm.template('{name}'): {f!r} is not a function")

    @functools.wraps(f)
    def run(cfg: Config, *args: Any) -> tuple[Any, list]:
        s, bufs, _ = instantiate(name, f, cfg, args)
        return s, bufs

    main = getattr(f, "__module__", None) in ("__main__", "__mp_main__", None)
    by_value = functools.partial(_pickled, name, f) if main else None
    try:
        register_template("autotvm", name, run, by_value=by_value)
    except TemplateError as exc:
        raise AutotvmError(f"autotvm.template: {exc}") from None
    _FUNCS[name] = f


def _pickled(name: str, f: Callable[..., Any]) -> bytes:
    """The registration of template ``name`` (the main script's ``f``) for a worker."""
    if cloudpickle is None:
        raise AutotvmError(
            f"template '{name}' is defined in the main script: the tuner's workers get it by "
            "value, with cloudpickle; pip install cloudpickle, or define the template in a "
            "module that the script imports"
        )
    return bytes(cloudpickle.dumps(functools.partial(register_by_value, name, f)))


def register_by_value(name: str, f: Callable[..., Any]) -> None:
    """In a tuner's worker: register template ``name``, sent by value."""
    if name not in AUTOTVM_TEMPLATES:
        _register(name, f)


def templates() -> list[str]:
    """The names of the registered AutoTVM templates."""
    return sorted(_FUNCS)


def _function(name: Any) -> Callable[..., Any]:
    if not isinstance(name, str) or name not in _FUNCS:
        known = ", ".join(templates()) or "none yet"
        raise AutotvmError(
            f"unknown autotvm template {name!r} (registered: {known}); decorate the template "
            "function with @autotvm.template(name) before creating its task"
        )
    return _FUNCS[name]


def instantiate(
    name: str, f: Callable[..., Any], cfg: Config, args: Sequence[Any], fallback: bool = False
) -> tuple[Any, list, ConfigEntity]:
    """Run template ``f`` with the knobs of ``cfg``; ``(schedule, tensors, its config)``."""
    entity = ConfigEntity(cfg, name, is_fallback=fallback)
    _RUNNING.append(entity)
    try:
        s, bufs = check_result(name, f(*args))
    finally:
        _RUNNING.pop()
    return s, bufs, entity


def get_config() -> ConfigEntity:
    """The config of the template running now, to define and read its knobs."""
    if not _RUNNING:
        raise AutotvmError(
            "autotvm.get_config() is called outside a template: call it inside a function "
            "decorated with @autotvm.template(name), which tuning, task.create and "
            "apply_history_best run"
        )
    return _RUNNING[-1]


# ---------------------------------------------------------------------------- tasks


def _device_of(target: Target | None) -> tuple[str | None, str]:
    """``("P:D" or None for the device in use, the device's name)`` that ``ts.build`` uses
    for ``target`` (``None``: the current target, else the device in use)."""
    backend, dev = resolve_target(target)
    if backend == "python":
        raise AutotvmError(
            "autotvm: target 'python' runs on no device, so nothing can be tuned or looked "
            "up for it; use 'llvm' (the CPU OpenCL device) or 'opencl'"
        )
    dev = dev if dev is not None else current_device()
    spec = f"{dev.platform_index}:{dev.device_index}"
    return spec, DeviceLimits.of(dev).name


class Task:
    """A tuning task (TVM's ``autotvm.task.Task``): template ``name`` at ``args`` for
    ``target``. ``config_space`` (printable), ``flop``, ``workload``, ``instantiate``;
    ``ts_task`` is the tensorsched task the tuner runs, ``device`` its device ("P:D")."""

    def __init__(self, name: str, args: Sequence[Any], target: Any, target_host: Any = None):
        self.func = _function(name)
        self.name = name
        try:
            self.ts_task = TsTask("autotvm", name, (), args=tuple(args))
        except TensorschedError as exc:
            raise AutotvmError(f"autotvm.task.create('{name}', args={args!r}): {exc}") from None
        self.args = self.ts_task.args
        self.kwargs: dict[str, Any] = {}
        self.target = target if isinstance(target, Target) else Target(str(target))
        self.target_host = target_host
        self.device, self.device_name = _device_of(self.target)
        cfg = Config()
        _, _, entity = instantiate(name, self.func, cfg, self.args)
        self.config_space = ConfigSpace(entity.space_map, cfg, name)
        self.flop = self.ts_task.flop

    @property
    def workload(self) -> tuple:
        return (self.name, *self.args)

    def instantiate(self, config: ConfigEntity | dict | None = None) -> tuple[Any, list]:
        """``(schedule, tensors)`` of the template at ``config`` (a point of the space, or
        a dict as the log holds it; default: the fallback)."""
        values = config.config.values if isinstance(config, ConfigEntity) else config
        s, bufs, _ = instantiate(self.name, self.func, Config(values or {}), self.args)
        return s, bufs

    def __repr__(self) -> str:
        return f"Task(func_name={self.name}, args={self.args}, workload={self.workload})"


def create(task_name: str, args: Sequence[Any], target: Any, target_host: Any = None) -> Task:
    """The task of template ``task_name`` at ``args`` for ``target`` (``"llvm"``: the CPU
    OpenCL device, ``"opencl"``: the device in use)."""
    if not isinstance(args, (tuple, list)):
        raise AutotvmError(f"autotvm.task.create: args must be a tuple, got {args!r}"[:200])
    return Task(task_name, args, target, target_host)


# ---------------------------------------------------------------------------- dispatch


class ApplyHistoryBest:
    """Within ``with apply_history_best(log):``, a template called directly builds the
    fastest correct config that the log has for its arguments on the current target's
    device. ``records``: a log's path (or a list of paths), as ``log_to_file`` wrote it."""

    def __init__(self, records: Any) -> None:
        paths = [records] if isinstance(records, (str, os.PathLike)) else records
        if not isinstance(paths, (list, tuple)) or not paths:
            raise AutotvmError(
                f"apply_history_best: give the path of a tuning log, got {records!r}"[:200]
            )
        self.best: dict[tuple[str, str], dict] = {}  # (task key, device) -> config
        loaded = []
        for path in paths:
            loaded += _read(os.fspath(path))
        for r in ranked_configs(loaded):  # fastest first
            self.best.setdefault((r.task_key(), r.device), r.config)

    def query(self, task: TsTask, device: str) -> dict | None:
        return self.best.get((task.key(), device))

    def __enter__(self) -> ApplyHistoryBest:
        _HISTORY.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if _HISTORY and _HISTORY[-1] is self:
            _HISTORY.pop()


def apply_history_best(records: Any) -> ApplyHistoryBest:
    """``with autotvm.apply_history_best("matmul.log"):`` (see ``ApplyHistoryBest``)."""
    return ApplyHistoryBest(records)


def _read(path: str) -> list:
    """The records of the log at ``path``; ``AutotvmError`` when it is missing, or when it
    has lines and none is a record (damaged lines among good ones are skipped with a
    warning, as ``read_log`` does)."""
    if not os.path.isfile(path):
        raise AutotvmError(
            f"apply_history_best: there is no tuning log at {path}; tune first with "
            f"callbacks=[autotvm.callback.log_to_file({path!r})], or give the log's path"
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = read_log(path)
    if not records and caught:
        raise AutotvmError(
            f"apply_history_best: {path} holds no tuning record tensorsched can use "
            f"({caught[0].message}); give a log written by autotvm.callback.log_to_file"
        )
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return records


def _dispatch(name: str, f: Callable[..., Any], args: tuple) -> tuple[Any, list]:
    """A template called directly: the best logged config, else the fallback."""
    if _RUNNING:  # one template calling another: the same config
        return check_result(name, f(*args))
    try:
        task = TsTask("autotvm", name, (), args=args)
    except TensorschedError as exc:
        raise AutotvmError(f"template '{name}' called with {args!r}: {exc}"[:400]) from None
    config = None
    device = ""
    if _HISTORY:
        _, device = _device_of(None)
        for ctx in reversed(_HISTORY):
            config = ctx.query(task, device)
            if config is not None:
                break
    if config is None:
        where = device or str(Target.current() or "opencl")
        key = (where, repr((name, *args)))
        if key not in _WARNED:
            _WARNED.add(key)
            logger.warning(
                "Cannot find config for target=%s, workload=%s. A fallback configuration "
                "is used, which may bring great performance regression.",
                where,
                (name, *args),
            )
    s, bufs, _ = instantiate(name, f, Config(config or {}), args, fallback=config is None)
    return s, bufs
