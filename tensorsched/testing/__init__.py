"""Test helpers that ship with tensorsched: numerical checks against numpy
(``check_numerics``), the schedule fuzzer (``tensorsched.testing.fuzz``) and the catalogue of
user errors (``tensorsched.testing.catalogue``).

Importing this package imports neither hypothesis nor pytest; ``fuzz`` needs hypothesis.
"""
from .numerics import NumericsMismatch, check_numerics, conv2d_ref, poisoned, random_array

__all__ = ["check_numerics", "NumericsMismatch", "conv2d_ref", "poisoned", "random_array"]
