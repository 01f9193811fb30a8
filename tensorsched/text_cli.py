"""``tensorsched ir``: the lowered IR (or OpenCL) of a tensor expression given as text.

    tensorsched ir --expr "C[i, j] += A[i, k] * B[k, j]" --shape i=64,j=64,k=64
    tensorsched ir --expr "B[i] = exp(A[i]); C[i] = B[i] * 2.0" --shape i=1000 --opencl

``cli.py`` wires these in: ``add_ir_parser(subparsers)`` declares the command and
``cmd_ir(args)`` runs it.
"""
from __future__ import annotations


def add_ir_parser(subparsers):
    p = subparsers.add_parser(
        "ir", help="print the lowered IR of a tensor expression given as text",
        description="Lower a tensor expression written as text (ts.parse_expr) with the default "
                    "schedule, or the generic template, and print its IR or OpenCL source.")
    p.add_argument("--expr", required=True,
                   help='statements separated by ";" or newlines, e.g. '
                        '"C[i, j] += A[i, k] * B[k, j]"')
    p.add_argument("--shape", default="",
                   help="index extents and input shapes: i=1024,j=1024,k=1024 (A=34x34)")
    p.add_argument("--dtype", default="float32", help="dtype of the inputs (default float32)")
    p.add_argument("--name", default="default_function", help="the function's name")
    p.add_argument("--generic", action="store_true",
                   help="schedule with the generic template's default knobs (split, bind, "
                        "unroll, vectorize) instead of the default schedule")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--func", action="store_true",
                      help="print the function form (with the signature; ts.parse_ir reads it)")
    form.add_argument("--opencl", action="store_true", help="print the OpenCL source instead")
    return p


def schedule_text(expr, shape, dtype="float32", generic=False):
    """``(schedule, args)`` for tensor-expression text: the default schedule of its last
    statement (or the generic template's defaults); args are the inputs then the output."""
    from .ir.tensor import PlaceholderOp
    from .ir.te_text import parse_expr
    from .schedules.schedule import create_schedule
    if generic:
        from .ops.templates.generic import generic as template
        from .tune.space import Config
        return template(Config(), expr, shape, dtype=dtype)
    tensors = list(parse_expr(expr, shape, dtype).values())
    out = tensors[-1]
    args = [t for t in tensors if isinstance(t.op, PlaceholderOp)] + [out]
    return create_schedule(out.op), args


def cmd_ir(args):
    from .schedules.lower import lower
    s, targs = schedule_text(args.expr, args.shape, args.dtype, args.generic)
    func = lower(s, targs, name=args.name)
    if args.opencl:
        from .codegen.opencl import emit_opencl
        print(emit_opencl(func).text)
    else:
        print(func.script() if args.func else func)
