"""The IR: expressions, statements, tensors and their text. ``tvm.ir``'s registration
functions are here too (``ts.ir.register_intrin_lowering``), each refused: tensorsched has no
registry of intrinsics or per-target lowering rules. ``ts.ir.structural_equal`` and
``assert_structural_equal`` compare IR trees up to the names of the variables they bind."""

from ..errors import ComputeError
from .structural import assert_structural_equal, structural_equal

__all__ = [
    "assert_structural_equal",
    "register_intrin_lowering",
    "register_op_attr",
    "structural_equal",
]


def _no_registry(call: str) -> ComputeError:
    return ComputeError(
        f"{call}: tensorsched has no registry of intrinsics or of their per-target lowering "
        "rules: each intrinsic (ts.exp, ts.log ...) has one OpenCL C built-in, used for every "
        "target. Write a function of your own as a Python function of those intrinsics "
        "(def mylog(x): return ts.log(x)); see docs/tvm_compat.md"
    )


def register_intrin_lowering(op_name: str, target: str, *, f=None, level: int = 10) -> None:
    """TVM's ``tvm.ir.register_intrin_lowering``: refused (a ComputeError)."""
    raise _no_registry(f"register_intrin_lowering({op_name!r}, target={target!r})")


def register_op_attr(op_name: str, attr_key: str, value=None, level: int = 10) -> None:
    """TVM's ``tvm.ir.register_op_attr``: refused (a ComputeError)."""
    raise _no_registry(f"register_op_attr({op_name!r}, {attr_key!r})")
