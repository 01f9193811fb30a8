"""A case and the Python code that reproduces it (``to_python``)."""

from __future__ import annotations

from dataclasses import dataclass

from .model import Ax, Raw
from .workloads import HEADERS, PRELUDE


@dataclass(frozen=True)
class Case:
    workload: str
    sizes: tuple  # ((name, value), ...)
    steps: tuple
    mode: str = "legal"

    def __repr__(self):  # what hypothesis prints for a failing case
        return "\n" + to_python(self)


def _arg(v):
    if isinstance(v, Ax):
        return v.ident
    if isinstance(v, Raw):
        return v.code
    if isinstance(v, list):
        return "[" + ", ".join(_arg(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(_arg(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def _axes_in(v):
    if isinstance(v, Ax):
        yield v
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _axes_in(x)


class Renderer:
    """Turns steps into code, unpacking ``s[X].op.axis`` the first time one of them is used."""

    def __init__(self):
        self.defined = set()

    def step(self, step):
        lines = []
        for a in _axes_in((step.args, tuple(v for _, v in step.kw))):
            if a.ident not in self.defined and a.origin is not None:
                kind, names = a.origin
                targets = [Ax(a.stage, n).ident for n in names]
                lhs = ", ".join(targets) + ("," if len(targets) == 1 else "")
                lines.append(f"{lhs} = s[{a.stage}].op.{kind}")
                self.defined.update(targets)
        call = ", ".join([_arg(x) for x in step.args] + [f"{k}={_arg(v)}" for k, v in step.kw])
        target = f"s[{step.stage}]"
        if step.prim in ("cache_read", "cache_write", "rfactor"):
            expr = f"s.{step.prim}({step.stage}{', ' if call else ''}{call})"
        elif step.prim == "compute_at":
            parent, rest = step.args[0], step.args[1:]
            parent = parent.code if isinstance(parent, Raw) else f"s[{parent}]"
            expr = f"{target}.compute_at({parent}, {', '.join(_arg(x) for x in rest)})"
        else:
            expr = f"{target}.{step.prim}({call})"
        if step.out:
            outs = [o.ident if isinstance(o, Ax) else o for o in step.out]
            self.defined.update(outs)
            lhs = ", ".join(outs) + (
                "," if len(outs) == 1 and step.prim in ("split", "tile") else ""
            )
            expr = f"{lhs} = {expr}"
        if step.expect == "error":
            expr += "  # misuse: must raise a ts.TensorschedError"
        return "\n".join(lines + [expr]) + "\n"


def header(case):
    return HEADERS[case.workload](dict(case.sizes))


def to_python(case, target="python"):
    """The case as a runnable script of ``ts`` calls."""
    r = Renderer()
    body = "".join(r.step(st) for st in case.steps)
    tail = (
        'func = ts.lower(s, args, name="fuzzed")  # must raise a ts.TensorschedError '
        "(if no step above did)\n"
        if case.mode == "illegal"
        else f'func = ts.lower(s, args, name="fuzzed")\ncheck_numerics(func, args, ref, '
        f"target={target!r})\n"
    )
    return (
        f"# tensorsched fuzz case: workload {case.workload}, mode {case.mode}\n"
        + PRELUDE
        + header(case)
        + "\n"
        + body
        + tail
    )
