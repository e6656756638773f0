"""``python -m clspmv``: the same as the ``clspmv`` command."""

import sys

from .cli import main

sys.exit(main())
