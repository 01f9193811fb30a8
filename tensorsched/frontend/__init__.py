"""Bringing networks in: ONNX models (``from_onnx``) and back out (``to_onnx``)."""

from .onnx import OnnxImportError, UnsupportedOperatorError, from_onnx, to_onnx

__all__ = ["from_onnx", "to_onnx", "OnnxImportError", "UnsupportedOperatorError"]
