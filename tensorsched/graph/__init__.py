"""Networks as graphs of operators: the graph and its builder API (``Graph``), the graph
passes (``optimize``), the numpy reference (``run_reference``), task extraction
(``extract_tasks``) and the executor (``build``, returning a ``Net``)."""

from .executor import Net, Profile, build
from .graph import OPS, Graph, GraphError, Node, TensorInfo
from .passes import PIPELINE, MemoryPlan, optimize
from .reference import run_reference
from .tasks import extract_tasks

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
    "extract_tasks",
    "build",
    "Net",
    "Profile",
]
