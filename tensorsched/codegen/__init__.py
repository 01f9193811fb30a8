"""Code generation: lowered IR -> OpenCL C (``opencl.py``) or Python (``python.py``)."""
