"""Every notebook of notebooks/ runs top to bottom in a fresh python3 kernel, so none can rot."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import time
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
#: Seconds any one cell may take (the slowest cells train small models on the shipped datasets).
CELL_TIMEOUT = 300


def _notebooks() -> list:
    files = sorted(NOTEBOOKS.glob("*.ipynb")) if NOTEBOOKS.is_dir() else []
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no notebooks in {NOTEBOOKS}"), id="none")]
    return [pytest.param(p, id=p.stem) for p in files]


@pytest.mark.parametrize("path", _notebooks())
def test_notebook_runs(path: Path) -> None:
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed: pip install '.[test]'")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed: pip install '.[test]'")
    pytest.importorskip("ipykernel", reason="ipykernel (the python3 kernel) is not installed: pip install '.[test]'")
    pytest.importorskip("matplotlib", reason="matplotlib is not installed: pip install '.[test]'")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT,
                                     resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - t0
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, f"{path.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
    print(f"{path.name}: {elapsed:.1f} s")


def test_notebooks_use_public_api_only() -> None:
    """Studies use the public pyspmv API: never the C glue or private names."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed: pip install '.[test]'")
    files = sorted(NOTEBOOKS.glob("*.ipynb")) if NOTEBOOKS.is_dir() else []
    if not files:
        pytest.skip(f"no notebooks in {NOTEBOOKS}")
    for p in files:
        src = "\n".join(c.source for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code")
        assert "_core" not in src and "pyspmv._" not in src, p.name
