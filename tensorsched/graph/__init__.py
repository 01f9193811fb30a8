"""Networks as graphs of operators: the graph and its builder API (``Graph``), the graph
passes (``optimize``), the numpy reference (``run_reference``) and the executor (``build``)."""

from .graph import OPS, Graph, GraphError, Node, TensorInfo
from .passes import PIPELINE, MemoryPlan, optimize
from .reference import run_reference

__all__ = [
    "OPS",
    "Graph",
    "GraphError",
    "Node",
    "TensorInfo",
    "PIPELINE",
    "MemoryPlan",
    "optimize",
    "run_reference",
]
