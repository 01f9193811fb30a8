"""Running built modules: OpenCL devices, modules, timing; TVM's runtime names."""

from .awake import awake_cores
from .module import load_module  # ts.runtime.load_module, as tvm.runtime.load_module

__all__ = ["awake_cores", "load_module"]
