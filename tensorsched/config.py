"""Every debug switch of tensorsched, read once from the environment.

``TS_DEBUG=ir`` prints the IR after each lowering pass that changed it, with the pass's time.
``TS_VERIFY=1`` checks the IR between passes (always on in the test suite).
``TS_ROUNDTRIP=1`` checks that every lowered function prints and parses back to itself
(``ts.parse_ir``; on in the test suite and in the examples it runs).
"""

import os
from dataclasses import dataclass


@dataclass
class Config:
    debug_ir: bool = "ir" in os.environ.get("TS_DEBUG", "").split(",")
    verify: bool = os.environ.get("TS_VERIFY", "") == "1"
    roundtrip: bool = os.environ.get("TS_ROUNDTRIP", "") == "1"


config = Config()
