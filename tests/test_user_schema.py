"""A user's own table end to end: another library's kernel variants, its own matrix statistics (a signed
skewness, missing values) and parameter columns; every model kind trains, evaluates with the user's
folds and baseline, saves, loads and exports a C header whose ranking of the user's configurations is
the Python model's."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from sklearn.model_selection import GroupKFold

import pyspmv
from pyspmv import models
from pyspmv.evaluate import evaluate_folds

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
VARIANTS = {"merge_path": (0, 256), "csr_adaptive": (0, 128), "csr_vector_w4": (4, 128), "csr_vector_w32": (32, 256),
            "ell_k4": (4, 64), "sliced_ell_c8": (8, 256), "coo_flat": (np.nan, 512), "dia_band": (np.nan, 64)}
FEATURES = ["rows", "nonzeros", "row_len_cv", "row_len_skew", "band_frac", "cache_miss_est"]
PARAMS = ["width", "block"]


def user_table(n: int = 50, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """~50 matrices x 8 variants: runtimes driven by the statistics, including the signed skewness."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(n):
        f = {"rows": float(rng.integers(100, 100000)), "nonzeros": 0.0, "row_len_cv": rng.uniform(0, 3),
             "row_len_skew": rng.normal(0, 2), "band_frac": rng.uniform(0, 1),
             "cache_miss_est": np.nan if m % 7 == 3 else rng.uniform(0, 0.5)}
        f["nonzeros"] = f["rows"] * rng.uniform(2, 40)
        if m % 11 == 5:
            f["row_len_cv"] = np.nan
        for j, (cid, (w, b)) in enumerate(VARIANTS.items()):
            skew = f["row_len_skew"]
            t = f["nonzeros"] * 1e-6 * (1 + j * 0.05) * (1 + (0.3 * skew if j % 2 else -0.3 * skew) ** 2 / 4)
            t *= 1 + (f["band_frac"] if cid == "dia_band" else 0.2 * np.nan_to_num(f["row_len_cv"], nan=1.0) * (j % 3 == 0))
            rows.append({"config": cid, **f, "width": w, "block": float(b), "ms": t * rng.uniform(0.97, 1.03),
                         "matrix": f"m{m}"})
    df = pd.DataFrame(rows)
    return df.drop(columns=["ms", "matrix"]), df["ms"].to_numpy(), df["matrix"].to_numpy()


KINDS = {"linear": lambda: models.LinearModel(group_by="config", features=FEATURES, params=PARAMS),
         "knn": lambda: models.KNNModel(n_passes=1, features=FEATURES, params=PARAMS),
         "boosted": lambda: models.BoostedModel(n_estimators=30, features=FEATURES, params=PARAMS),
         "forest": lambda: models.ForestModel(n_estimators=8, features=FEATURES, params=PARAMS),
         "svm": lambda: models.SVMModel(C_grid=(1.0, 10.0), gamma_grid=(1.0,), n_components=16, features=FEATURES,
                                        params=PARAMS),
         "cascade": lambda: models.CascadeModel(n_estimators=10, features=FEATURES, params=PARAMS)}

MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#define M_IMPLEMENTATION
#include "H.h"
int main(int argc, char **argv) {
    double f[M_NFEATURES], ms[M_NCONFIGS];
    int order[M_NCONFIGS];
    for (int k = 0; k < M_NFEATURES; k++) f[k] = k + 1 < argc ? strtod(argv[k + 1], NULL) : NAN;
    if (M_rank_features(f, order, ms) != 0) return 2;
    for (int j = 0; j < M_NCONFIGS; j++) printf("%d %.17g\n", order[j], ms[order[j]]);
    return 0;
}
"""


def test_user_schema_is_recorded():
    X, y, g = user_table()
    m = models.KNNModel(n_passes=1, features=FEATURES, params=PARAMS).fit(X, y, groups=g)
    assert not m.schema_.own and m.schema_.features == tuple(FEATURES)
    assert m.feature_tf_.signed == tuple(f == "row_len_skew" for f in FEATURES)    # only the skewness has a sign
    assert sorted(m.configs_.index) == sorted(VARIANTS)
    with pytest.raises(ValueError, match="does not read: 'extra_stat'"):
        models.KNNModel(features=FEATURES, params=PARAMS).fit(X.assign(extra_stat=1.0), y, groups=g)
    with pytest.raises(ValueError, match="'groups' parameter"):
        models.KNNModel(features=FEATURES, params=PARAMS).fit(X, y)


def test_signed_feature_keeps_its_sign():
    X, _, _ = user_table()
    tf = models.FeatureTransform.fit(X, FEATURES)
    Z = tf.apply(X)
    k = FEATURES.index("row_len_skew")
    s = X["row_len_skew"].to_numpy()
    assert np.array_equal(np.sign(Z[:, k]), np.sign(s))
    assert np.isfinite(Z).all()                                              # missing values imputed


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_user_table_end_to_end(kind, tmp_path):
    X, y, g = user_table()
    folds = list(GroupKFold(n_splits=3).split(X, groups=g))
    ev = evaluate_folds(KINDS[kind](), X, y, g, folds=folds, baseline="csr_adaptive",
                        rules={"always_merge": "merge_path", "by_skew": lambda f: np.where(
                            f["row_len_skew"] > 0, "ell_k4", "coo_flat")})
    s = ev.summary
    assert s["n_test_units"] == 50 and np.isfinite(s["geomean_ratio"])
    assert np.isfinite(s["speedup_vs_baseline"]) and np.isfinite(s["speedup_vs_by_skew"])
    m = KINDS[kind]().fit(X, y, groups=g)
    path = pyspmv.save_model(m, tmp_path / "m.pyspmv")
    rm = pyspmv.load_model(path)
    assert rm.features == FEATURES and rm.device is None
    q = X[g == "m3"].reset_index(drop=True)                                 # a matrix with a missing statistic
    py = pd.Series(m.rank_scores(q), index=q["config"].to_numpy())
    ranked = rm.rank_features(q.loc[0, FEATURES].to_numpy(dtype=np.float64))
    assert sorted(ranked.index) == sorted(VARIANTS)
    np.testing.assert_allclose(ranked.to_numpy(), py[ranked.index].to_numpy(), rtol=1e-9)
    with pytest.raises(ValueError, match="own features"):
        pyspmv.rank(pyspmv.Matrix(scipy.sparse.eye(8, format="csr")), model=rm)
    if CC is None:
        pytest.skip("no C compiler (cc, gcc or clang) on PATH")
    pyspmv.export_c(m, tmp_path / "H.h", name="M")
    (tmp_path / "main.c").write_text(MAIN)
    exe = tmp_path / "main"
    r = subprocess.run([CC, "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-o", str(exe), str(tmp_path / "main.c"),
                        "-lm"], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    args = ["nan" if np.isnan(v) else repr(float(v)) for v in q.loc[0, FEATURES]]
    out = subprocess.run([str(exe), *args], capture_output=True, text=True, check=True).stdout.split("\n")
    pairs = [line.split() for line in out if line]
    ids = [rm.table("float64").ranked().config_ids[int(i)] for i, _ in pairs]
    assert ids == list(ranked.index)                                         # the header ranks as Python does
    np.testing.assert_allclose([float(v) for _, v in pairs], ranked.to_numpy(), rtol=1e-9)


def test_hostile_names_reach_c_only_escaped(tmp_path):
    X, y, g = user_table(20)
    evil = {"merge_path": 'x"); system("rm -rf /"); //', "ell_k4": "a\\\nb */ #define ??/"}
    feats = {"band_frac": 'band"*/\n#include <evil.h>'}
    X = X.replace({"config": evil}).rename(columns=feats)
    fnames = [feats.get(f, f) for f in FEATURES]
    m = models.LinearModel(group_by="config", select=False, features=fnames, params=PARAMS).fit(X, y, groups=g)
    h = pyspmv.export_c(m, tmp_path / "H.h", name="M").read_text()
    for s in (*evil.values(), *feats.values(), "system(", "evil.h", "??/"):
        assert s not in h
    if CC is None:
        pytest.skip("no C compiler (cc, gcc or clang) on PATH")
    main = tmp_path / "main.c"
    main.write_text('#include <stdio.h>\n#include <string.h>\n#define M_IMPLEMENTATION\n#include "H.h"\nint main(void) {\n'
                    '    for (int j = 0; j < M_NCONFIGS; j++) printf("%s\\n", M_config_ids[j]);\n'
                    '    for (int k = 0; k < M_NFEATURES; k++) printf("%s\\n", M_feature_names[k]);\n    return 0;\n}\n')
    r = subprocess.run([CC, "-std=c11", "-Wall", "-Wextra", "-Werror", "-o", str(tmp_path / "main"), str(main), "-lm"],
                       capture_output=True, text=True, cwd=tmp_path, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    out = subprocess.run([str(tmp_path / "main")], capture_output=True, check=True).stdout.decode()
    for s in (*evil.values(), *feats.values()):
        assert s in out                                                      # the names come back as given


def test_a_file_asking_a_feature_vector_ranking_for_bytes_is_refused(tmp_path):
    """A model on the user's features has no bytes moved to rank by: a file that asks for it (rank_bytes_pow
    edited in) is refused when loaded, and the core refuses to rank a feature vector by bytes (the header's path)."""
    import json
    X, y, g = user_table()
    path = pyspmv.save_model(KINDS["forest"]().fit(X, y, groups=g), tmp_path / "m.pyspmv")
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(bytes(arrays.pop("header.json")).decode())
    header["version"] = 3
    header["tables"]["float64"]["spec"]["scalars"]["rank_bytes_pow"] = 0.5
    with open(tmp_path / "bad.pyspmv", "wb") as f:
        np.savez(f, **{"header.json": np.frombuffer(json.dumps(header).encode(), np.uint8)}, **arrays)
    with pytest.raises(ValueError, match="no bytes moved to rank by: its 'rank_bytes_pow' must be 0. Got 0.5"):
        pyspmv.load_model(tmp_path / "bad.pyspmv")
