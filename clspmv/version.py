"""The package's version, in a module of its own so that modules inside the package (the
calibration store, the benchmark's metadata) can read it without importing the package's
``__init__`` (which imports :mod:`clspmv.matrix`, which imports :mod:`clspmv.model`)."""

__version__ = "0.1.0"
"""Keep equal to ``version`` in pyproject.toml."""
