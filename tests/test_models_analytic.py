"""Guo & Wang's and Wang, Gu & Li's models: exact on their own benchmark matrices, instrumentation on the CPU."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pyspmv.models import GuoModel, WangModel

PROPS = {"sm_count": 2, "max_threads_per_sm": 32, "max_threads_per_block": 16, "warp_size": 1}
R = 64  # rows per strip with PROPS


def guo_timer(A, cfgs, dtype):
    """Times that follow Guo's relations exactly (a device that obeys the model)."""
    L = np.diff(A.indptr)
    s = max(1, int(np.ceil(A.nrows / R)))
    x, w = np.bincount(L).argmax(), L.max()
    fmt = cfgs[0].format
    if fmt == "csr":
        t = s * ((1 + 0.1 * x) if x <= PROPS["max_threads_per_block"] else (3 + 0.05 * x))
    elif fmt == "ell":
        t = (2 + 0.3 * w) + (s - 1) * (0.5 + 0.2 * w)
    else:
        t = 0.7 + 0.4 * max(1, int(np.ceil(A.nnz / R)))
    return pd.DataFrame({"status": ["ok"], "median_ms": [t]})


def test_guo_exact_on_its_benchmark_matrices():
    m = GuoModel(device_props=PROPS).instrument("cpu", timer=guo_timer)
    tab = m.instrument_
    assert set(tab["format"]) == {"csr", "ell", "coo"}
    x = tab.loc[tab["format"] == "csr", "nnz_mode"]
    assert (x <= 16).any() and (x > 16).any()                       # both CSR segments are measured
    np.testing.assert_allclose(m.predict(tab.drop(columns=["matrix", "ms"])), tab["ms"], rtol=1e-9)
    i = list(m.groups_).index("cpu/csr/rows@f64")
    np.testing.assert_allclose(m.coef_[i, :4], [1, 0.1, 3, 0.05], atol=1e-9)
    # HYB = ELL + COO: ELL's intercept plus COO's, ELL's slopes, COO's slope on strips of the COO part
    h = list(m.groups_).index("cpu/hyb@f64")
    np.testing.assert_allclose(m.coef_[h, :5], [2 + 0.7, 0.3, 0.5, 0.2, 0.4], atol=1e-9)


def test_guo_instrument_times_real_cpu_kernels():
    m = GuoModel(device_props=PROPS).instrument("cpu", repeats=3, strips=(1, 2), row_lengths=(1, 4, 16, 24))
    p = m.predict(m.instrument_.drop(columns=["matrix", "ms"]))
    assert np.all(np.isfinite(p)) and np.all(p > 0)
    assert m.props_ == PROPS


def test_wang_exact_when_the_device_follows_its_relations():
    def timer(A, cfgs, dtype):
        L = np.diff(A.indptr)
        s = max(1, int(np.ceil(A.nrows / R)))
        c = cfgs[0]
        if c.format == "csr":
            t = s * (0.5 + 0.02 * L.mean() + 0.03 * L.std() + (0.01 if c.id.endswith("nnz") else 0.02) * L.max())
        elif c.format == "ell":
            t = s * (0.4 + 0.05 * L.max())
        else:
            t = 1.0 + 0.2 * max(1, int(np.ceil(A.nnz / R))) + 0.01 * L.max()
        return pd.DataFrame({"status": ["ok"], "median_ms": [t]})

    m = WangModel(device_props=PROPS).instrument("cpu", timer=timer)
    tab = m.instrument_
    assert set(tab["config"]) == {"cpu/csr/rows", "cpu/csr/nnz", "cpu/ell", "cpu/jad"}
    assert tab["matrix"].str.contains("normal").any() and tab["matrix"].str.contains("uniform").any()
    np.testing.assert_allclose(m.predict(tab.drop(columns=["matrix", "ms"])), tab["ms"], rtol=1e-9)


def test_guo_and_wang_predict_nan_outside_their_formats():
    from modeldata import cpu_frame
    d = cpu_frame()
    for model, formats in ((GuoModel(), {"csr", "ell", "coo", "hyb"}), (WangModel(), {"csr", "ell", "jad"})):
        p = model.fit(d.X, d.y).predict(d.X)
        inside = d.X["format"].isin(formats).to_numpy()
        assert np.all(np.isfinite(p[inside])) and np.all(np.isnan(p[~inside]))


def test_instrument_rejects_bad_dtype():
    with pytest.raises(ValueError, match="'dtype'"):
        GuoModel(device_props=PROPS).instrument("cpu", dtype="int8", timer=guo_timer)
