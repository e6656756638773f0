"""Sphinx configuration of clspmv's documentation (``sphinx-build -W --keep-going -b html docs
docs/_build/html``). The pages are Markdown (myst-parser); the API reference is read from the
docstrings (autodoc + napoleon), which import the package but need no OpenCL device."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from clspmv.version import __version__  # noqa: E402  (after the path is set)

project = "clspmv"
author = "clspmv developers"
copyright = "clspmv developers"
release = version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.extlinks",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# Evidence (reports, scripts, tests) lives in the checkout beside docs/, not in the site: every
# page is one level deep, so from docs/_build/html/PAGE.html the checkout is three levels up.
# Browsing the built site from a checkout, {src}`reports/...` opens the file itself.
SOURCE = "../../../"
extlinks = {"src": (SOURCE + "%s", "%s")}

autodoc_member_order = "bysource"
# clspmv.distributed imports mpi4py, which needs an MPI library: the docs build without one.
autodoc_mock_imports = ["mpi4py"]
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = True

html_theme = "furo"
html_title = f"clspmv {release}"
