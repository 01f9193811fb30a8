"""Running built modules: OpenCL devices, modules, timing; TVM's runtime names."""

from .module import load_module  # ts.runtime.load_module, as tvm.runtime.load_module

__all__ = ["load_module"]
