"""A model's precision is a recorded fact of the model: the estimator states it, model files store it, rank() reads
it; a file written before files recorded it gets the precision its model had then (the rule of the loader)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

import pyspmv
from pyspmv.ranking.precision import DEFAULT_PRECISION, TARGET_PRECISION, Precision

TINY = Path(__file__).resolve().parent / "data" / "tiny_cpu"
DATA = Path(pyspmv.__file__).resolve().parent / "data"
A = pyspmv.generate("powerlaw", 2000)


@pytest.fixture(scope="module")
def fitted():
    ds = pyspmv.datasets.load(TINY, dtype="float64")
    forest = pyspmv.models.ForestModel(n_estimators=4).fit(ds.X, ds.y, ds.groups)
    lin = pyspmv.models.LinearModel(select=False).fit(ds.X, ds.y, ds.groups)
    return forest, lin


def _header(path):
    with zipfile.ZipFile(path) as zf:
        raw = zf.read("header.json.npy")
    return json.loads(bytes(np.lib.format.read_array(io.BytesIO(raw))).decode())


def _with_header(src, dst, edit):
    """A copy of the model file ``src`` at ``dst`` with its header edited by ``edit``: a file another pyspmv wrote."""
    with zipfile.ZipFile(src) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    h = _header(src)
    edit(h)
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.frombuffer(json.dumps(h).encode(), np.uint8))
    members["header.json.npy"] = buf.getvalue()
    with zipfile.ZipFile(dst, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return dst


def test_the_estimator_states_it_and_a_file_saved_now_records_it(fitted, tmp_path):
    forest, lin = fitted
    rm = pyspmv.portable(forest, "cpu")
    assert rm.precision == DEFAULT_PRECISION["cpu"] and pyspmv.portable(lin, "cpu").precision is None
    path = pyspmv.save_model(rm, tmp_path / "forest.pyspmv")
    assert _header(path)["precision"] == DEFAULT_PRECISION["cpu"]._asdict()
    back = pyspmv.load_model(path)
    assert back.precision == DEFAULT_PRECISION["cpu"] and isinstance(back.precision, Precision)
    assert pyspmv.rank(A, back).precision == DEFAULT_PRECISION["cpu"]
    path = pyspmv.save_model(lin, tmp_path / "linear.pyspmv", device="cpu")
    assert _header(path)["precision"] is None and pyspmv.load_model(path).precision is None


def test_rank_reads_the_recorded_precision_not_the_source(fitted, tmp_path):
    """A file's own figures are what rank() marks ties by, whatever estimator its source names."""
    forest, lin = fitted
    mine = Precision(0.5, 3.0, "my own held-out matrices")
    rm = pyspmv.portable(lin, "cpu")
    own = pyspmv.RankModel(rm.device, rm.tables, source=rm.source, meta=rm.meta, precision=mine)
    back = pyspmv.load_model(pyspmv.save_model(own, tmp_path / "mine.pyspmv"))
    assert back.precision == mine and pyspmv.rank(A, back).precision == mine
    path = pyspmv.save_model(forest, tmp_path / "forest.pyspmv", device="cpu")
    none = _with_header(path, tmp_path / "none.pyspmv", lambda h: h.__setitem__("precision", None))
    assert pyspmv.load_model(none).precision is None


def test_a_file_written_before_gets_the_precision_its_model_had(fitted, tmp_path):
    """Files without the field (the shipped defaults, and every file of pyspmv 0.3.0 and earlier): a runtime
    ForestModel has the default recipe's precision of its device, any other model none."""
    def written_before(model, name):
        path = pyspmv.save_model(model, tmp_path / f"{name}.pyspmv", device="cpu")
        old = _with_header(path, tmp_path / f"old_{name}.pyspmv", lambda h: h.pop("precision"))
        assert "precision" not in _header(old)
        return pyspmv.load_model(old)

    forest, lin = fitted
    assert written_before(forest, "forest").precision == DEFAULT_PRECISION["cpu"]
    assert written_before(lin, "linear").precision is None
    for device, target in (("cpu", "cpu"), ("cuda", "h100")):
        name = f"default_{target}.pyspmv"
        assert "precision" not in _header(DATA / name)           # kept as shipped: the loader derives it
        assert pyspmv.load_model(DATA / name).precision == DEFAULT_PRECISION[device]
        assert pyspmv.default_model(device, target=target).precision == DEFAULT_PRECISION[device]


def test_a_target_measured_on_its_own_data_records_its_own_precision():
    """The H200 default records the figures measured on the H200's data (rank_table_h200.md), not the device's
    (the H100's): train-default writes TARGET_PRECISION's, and rank() marks ties by it."""
    assert TARGET_PRECISION["h200"] != DEFAULT_PRECISION["cuda"] and "H200" in TARGET_PRECISION["h200"].source
    assert _header(DATA / "default_h200.pyspmv")["precision"] == TARGET_PRECISION["h200"]._asdict()
    rm = pyspmv.default_model("cuda", target="h200")
    assert rm.precision == TARGET_PRECISION["h200"]
    assert pyspmv.rank(A, rm).precision == TARGET_PRECISION["h200"]


@pytest.mark.parametrize(("value", "message"), [
    ([0.02, 1.5, "x"], r"the header's 'precision' must be null or a dict of 'tie_tol', 'max_gap' and 'source'"),
    ({"tie_tol": 0.02, "max_gap": 1.5}, r"the header's 'precision' must be null or a dict"),
    ({"tie_tol": "0.02", "max_gap": 1.5, "source": "x"}, r"the precision's 'tie_tol' must be a finite number >= 0"),
    ({"tie_tol": True, "max_gap": 1.5, "source": "x"}, r"the precision's 'tie_tol' must be a finite number >= 0"),
    ({"tie_tol": 10**400, "max_gap": 1.5, "source": "x"}, r"the precision's 'tie_tol' must be a finite number"),
    ({"tie_tol": 0.02, "max_gap": 0.5, "source": "x"}, r"the precision's 'max_gap' must be a finite number >= 1"),
    ({"tie_tol": 0.02, "max_gap": float("inf"), "source": "x"}, r"the precision's 'max_gap' must be a finite"),
    ({"tie_tol": 0.02, "max_gap": 1.5, "source": 3}, r"the precision's 'source' must be a str of at most"),
])
def test_a_damaged_precision_is_a_value_error(fitted, tmp_path, value, message):
    path = pyspmv.save_model(fitted[0], tmp_path / "f.pyspmv", device="cpu")
    bad = _with_header(path, tmp_path / "bad.pyspmv", lambda h: h.__setitem__("precision", value))
    with pytest.raises(ValueError, match="is not a pyspmv model file or is corrupt: " + message):
        pyspmv.load_model(bad)
