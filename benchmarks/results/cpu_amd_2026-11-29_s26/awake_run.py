"""python awake_run.py CMD ...: run CMD with every core kept awake (ts.runtime.awake_cores)."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
import tensorsched as ts  # noqa: E402

with ts.runtime.awake_cores():
    sys.exit(subprocess.run(sys.argv[1:]).returncode)
