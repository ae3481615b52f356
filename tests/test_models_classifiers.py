"""SVMModel's labels and CascadeModel's levels on tables whose best configuration is known."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pandas as pd
from modeldata import config_columns, planted_frame

from pyspmv import FEATURE_NAMES, config
from pyspmv.models import CascadeModel, SVMModel


def two_regime_frame(n=40, seed=0):
    """Configurations whose winner switches with nnz_mean: CSR vector below 8, ELL from 8 on."""
    rng = np.random.default_rng(seed)
    ids = ["pyspmv/csr/vector/tpv=4/bs=256", "pyspmv/csr/vector/tpv=32/bs=256", "pyspmv/ell/bs=256",
           "cusparse/csr/default"]
    cc = config_columns([config(i) for i in ids])
    parts = []
    for i in range(n):
        F = {f: float(rng.uniform(1, 100)) for f in FEATURE_NAMES}
        F["nnz_mean"] = float(rng.uniform(1, 16))
        X = cc.copy()
        for k in reversed(FEATURE_NAMES):
            X.insert(0, k, F[k])
        X["bytes_moved"], X["padding_ratio"], X["launches"] = 1e6, 1.0, 1.0
        small = F["nnz_mean"] < 8
        X["ms"] = [1.0 if small else 2.0, 1.5, 2.0 if small else 1.0, 3.0]
        X["matrix"] = f"m{i}"
        parts.append(X)
    T = pd.concat(parts, ignore_index=True)
    return T.drop(columns=["ms", "matrix"]), T["ms"], T["matrix"]


def test_svm_labels_follow_the_threshold():
    X, y, g = two_regime_frame()
    m = SVMModel(factor=0.5).fit(X, y, groups=g)
    # per matrix p = 1/t: best 1.0, mean of (1, 2/3, 1/2, 1/3) = 0.625 -> threshold 0.8125: only the best is good
    good = m.predict(X)
    best = (y.to_numpy() == 1.0).astype(int)
    assert (good == best).mean() > 0.9
    picks = m.predict_best(X, g)
    truth = pd.Series(X["config"].to_numpy()[best == 1], index=g.to_numpy()[best == 1])
    assert (picks == truth[picks.index]).mean() > 0.9
    assert np.all(m.predict_ms(X) > 0)


def test_cascade_levels_and_pick():
    X, y, g = two_regime_frame()
    m = CascadeModel(n_estimators=30).fit(X, y, groups=g)
    assert m.nodes_[0] == "" and set(m.labels_[0]) == {"csr", "ell"}
    i = m.nodes_.index("csr")
    assert set(m.labels_[i]) == {"pyspmv"}                 # cuSPARSE CSR is never the fastest CSR
    j = m.nodes_.index("csr/pyspmv")
    assert set(m.labels_[j]) == {"pyspmv/csr/vector/tpv=4/bs=256", "pyspmv/csr/vector/tpv=32/bs=256"}
    picked = m.predict(X, g)
    assert picked.sum() == g.nunique()
    assert (y.to_numpy()[picked == 1] == 1.0).mean() > 0.9


def test_cascade_on_planted_table_picks_a_measured_configuration():
    d = planted_frame()
    m = CascadeModel(n_estimators=10).fit(d.X, d.y, groups=d.groups)
    s = m.rank_scores(d.X)
    assert np.all(s <= 0) and np.all(s >= -1)
