"""Every debug switch of tensorsched, read once from the environment.

``TS_DEBUG=ir`` prints the IR after each lowering pass that changed it, with the pass's time.
``TS_VERIFY=1`` checks the IR between passes (always on in the test suite).
"""
import os
from dataclasses import dataclass


@dataclass
class Config:
    debug_ir: bool = "ir" in os.environ.get("TS_DEBUG", "").split(",")
    verify: bool = os.environ.get("TS_VERIFY", "") == "1"


config = Config()
