"""Sphinx configuration of pyspmv's documentation site (``pip install '.[docs]'``, then
``sphinx-build -W --keep-going -b html docs docs/_build/html``)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import shutil
from importlib.metadata import version as _version
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

project = "pyspmv"
author = "the pyspmv developers"
copyright = "the pyspmv developers, BSD-3-Clause"  # noqa: A001 (Sphinx's name)
release = _version("pyspmv")  # the installed package's metadata: the version is written once, in pyproject.toml
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_nb",  # Markdown pages and the notebooks, rendered with their stored outputs
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "README.md"]
templates_path = ["_templates"]  # autosummary/class.rst: a class's own members, none inherited from scikit-learn
nb_execution_mode = "off"  # the notebooks' outputs are the measured ones stored in notebooks/
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type"]

autosummary_generate = True
autodoc_typehints = "none"  # the numpydoc sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

html_theme = "furo"
html_title = f"pyspmv {release}"


def _copy_notebooks(app: object) -> None:
    """notebooks/ lives beside docs/: copied in (an ignored folder) so that Sphinx renders the stored outputs."""
    dest = HERE / "notebooks"
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir()
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        shutil.copy2(nb, dest / nb.name)


def _skip_sklearn(app: object, what: str, name: str, obj: object, skip: bool, options: object) -> bool | None:
    """scikit-learn's own methods on the estimators (``score``, ``get_params``, ``set_fit_request``, ...) are
    documented by scikit-learn; their docstrings refer to its site's labels."""
    return True if getattr(obj, "__module__", None) and obj.__module__.startswith("sklearn.") else None


def setup(app: object) -> None:
    app.connect("builder-inited", _copy_notebooks)  # type: ignore[attr-defined]
    app.connect("autodoc-skip-member", _skip_sklearn)  # type: ignore[attr-defined]
