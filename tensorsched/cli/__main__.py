"""``python -m tensorsched.cli``: the same as the ``tensorsched`` command."""

import sys

from . import main

sys.exit(main())
