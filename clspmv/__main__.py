"""``python -m clspmv``: the same as the ``clspmv`` command (:func:`clspmv.entry.main`)."""

import sys

from .entry import main

sys.exit(main())
