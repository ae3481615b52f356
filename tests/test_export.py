"""Export and ranking: every model kind in the C core and in an exported C99 header agrees with
Python (acceptance 1); bad model files, mismatched schemas and unknown devices are refused (2)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from functools import cache

import numpy as np
import pandas as pd
import pytest

import pyspmv
from pyspmv import models
from pyspmv.datasets import design_rows
from pyspmv.ranking.schema import ROW_COLUMNS

TOL = 1e-9
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

KINDS = {
    "linear": lambda: models.LinearModel(),
    "boosted": lambda: models.BoostedModel(n_estimators=15, max_depth=3),
    "boosted_per_format": lambda: models.BoostedModel(per="format", n_estimators=5, max_depth=2),
    "knn": lambda: models.KNNModel(n_passes=1),
    "svm": lambda: models.SVMModel(max_search_groups=2, C_grid=(10.0,), gamma_grid=(1.0,)),
    "cascade": lambda: models.CascadeModel(n_estimators=8, max_depth=2),
    "guo": lambda: models.GuoModel(),
    "wang": lambda: models.WangModel(),
    "forest": lambda: models.ForestModel(n_estimators=8),
    "forest_bytes_prior": lambda: models.ForestModel(n_estimators=8, bytes_prior=0.5),
}


@cache
def matrices() -> tuple[pyspmv.Matrix, ...]:
    """Training matrices of different structure, one of them with a row that makes ELL and DIA
    inapplicable (max_fill)."""
    ms = [pyspmv.generate("poisson2d", n) for n in (6, 9, 13)]
    ms += [pyspmv.generate(k, n, seed=s) for k in ("random", "powerlaw") for n, s in ((120, 0), (260, 1), (400, 2))]
    ms += [pyspmv.generate("banded", 300), pyspmv.generate("poisson3d", 5)]
    return tuple(ms)


@cache
def unseen_matrices() -> tuple[pyspmv.Matrix, ...]:
    return (pyspmv.generate("poisson2d", 11), pyspmv.generate("powerlaw", 350, seed=7),
            pyspmv.generate("random", 90, seed=5))


def X_of(A: pyspmv.Matrix, cfgs: list[pyspmv.Config], dtype: str = "float64") -> pd.DataFrame:
    """Python's design rows of A (pyspmv.datasets.design_rows)."""
    return design_rows(pyspmv.features(A), cfgs, pyspmv.config_features(A, cfgs, dtype=dtype),
                       4.0 if dtype == "float32" else 8.0)


@cache
def training() -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Every CPU configuration on the training matrices, both value types, runtimes planted from
    the features with noise (no timing: the models only need a relation to learn)."""
    rng = np.random.default_rng(1)
    cfgs = pyspmv.configs("cpu")
    parts, ys, gs = [], [], []
    for dtype in ("float32", "float64"):
        for A in matrices():
            X = X_of(A, cfgs, dtype)
            X = X[np.isfinite(X["bytes_moved"].to_numpy())]
            y = 1e-6 * X["bytes_moved"].to_numpy() * (1 + 0.3 * np.arange(len(X)) % 5) * rng.lognormal(0, 0.2, len(X))
            parts.append(X)
            ys.append(y)
            gs += [A.name] * len(X)
    return pd.concat(parts, ignore_index=True), np.concatenate(ys), np.array(gs)


@cache
def fitted(kind: str):
    X, y, g = training()
    return KINDS[kind]().fit(X, y, g)


def reported(m, X: pd.DataFrame) -> np.ndarray:
    """What the C core reports per configuration for estimator ``m``: its rank_scores, or, where the ranking
    weighs in the bytes moved (ForestModel's bytes_prior), the predicted times it ranks by them."""
    return m.predict(X) if getattr(m, "bytes_prior", 0) else m.rank_scores(X)


def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300))) if len(a) else 0.0


def check_order(order: np.ndarray, py: np.ndarray, applicable: np.ndarray) -> None:
    """``order`` (C) ranks the applicable configurations by Python's scores (ties within TOL either
    way), then the inapplicable ones."""
    k = int(applicable.sum())
    assert applicable[order[:k]].all() and not applicable[order[k:]].any()
    s = py[order[:k]]
    assert np.all(s[1:] >= s[:-1] - TOL * np.abs(s[:-1])), "C's order disagrees with Python's scores"


@pytest.mark.parametrize("kind", KINDS)
def test_core_agrees_with_python(kind):
    """RankModel (the C core) against the estimator's rank_scores on training and unseen rows, and
    the C core's design rows against pyspmv.datasets.design_rows."""
    m = fitted(kind)
    rm = pyspmv.portable(m, "cpu")
    X, _, _ = training()
    py, c = reported(m, X), rm.predict(X)
    assert np.array_equal(np.isnan(py), np.isnan(c))
    fin = np.isfinite(py)
    assert fin.sum() > 0 and rel(c[fin], py[fin]) <= TOL
    cfgs = pyspmv.configs("cpu")
    for A in unseen_matrices():
        for dtype in rm.tables:
            Xa = X_of(A, cfgs, dtype)
            R = rm.core_rows(A, dtype)[:, :len(ROW_COLUMNS)]
            ref = Xa.loc[:, list(ROW_COLUMNS)].to_numpy(np.float64)
            assert np.array_equal(np.isnan(R), np.isnan(ref))
            ok = np.isfinite(ref)
            assert np.all(np.abs(R[ok] - ref[ok]) <= TOL * np.abs(ref[ok]))


def write_csr(path, A: pyspmv.Matrix) -> None:
    with open(path, "w") as f:
        f.write(f"{A.nrows} {A.ncols} {A.nnz}\n")
        f.write(" ".join(map(str, A.indptr.tolist())) + "\n")
        f.write(" ".join(map(str, A.indices.tolist())) + "\n")


DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
%(includes)s

static int run(const char *name, int n, const char *const *ids,
               int (*rank)(int32_t, int32_t, const int32_t *, const int32_t *, int *, double *),
               int (*predict)(int32_t, int32_t, const int32_t *, const int32_t *, double *),
               int32_t nr, int32_t nc, const int32_t *ip, const int32_t *ix) {
    int *order = malloc(sizeof(int) * (size_t)n);
    double *ms = malloc(sizeof(double) * (size_t)n), *ms2 = malloc(sizeof(double) * (size_t)n);
    int rc = rank(nr, nc, ip, ix, order, ms);
    if (rc == 0) rc = predict(nr, nc, ip, ix, ms2);
    for (int j = 0; rc == 0 && j < n; j++) {
        if (ms[j] != ms2[j]) rc = 99;
        printf("%%s %%s %%d %%.17g\n", name, ids[j], order[j], ms[j]);
    }
    free(order), free(ms), free(ms2);
    return rc;
}

int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "r");
    int32_t nr, nc, nnz;
    if (f == NULL || fscanf(f, "%%d %%d %%d", &nr, &nc, &nnz) != 3) return 2;
    int32_t *ip = malloc(sizeof(int32_t) * (size_t)(nr + 1)), *ix = malloc(sizeof(int32_t) * (size_t)(nnz + 1));
    for (int32_t i = 0; i <= nr; i++) if (fscanf(f, "%%d", &ip[i]) != 1) return 2;
    for (int32_t i = 0; i < nnz; i++) if (fscanf(f, "%%d", &ix[i]) != 1) return 2;
    fclose(f);
    int rc = 0;
%(calls)s
    if (argc > 2) {            /* a bad matrix: unsorted columns in row 0 must be refused */
        int32_t bad_ip[3] = {0, 2, 2}, bad_ix[2] = {1, 0};
        double ms[%(n0)s];
        if (%(first)s_predict(2, 2, bad_ip, bad_ix, ms) != SPMV_EUNSORTED) rc = 3;
    }
    free(ip), free(ix);
    return rc;
}
"""


@pytest.mark.skipif(CC is None, reason="no C compiler (cc, gcc or clang) on PATH")
def test_exported_headers_compile_and_agree(tmp_path):
    """Acceptance 1: every kind exported, all headers in one translation unit (they share one copy of
    the core) compiled with -std=c99 -Wall -Wextra -Werror -O2, run on several matrices; predictions
    within 1e-9 of Python's and the same ranking."""
    rms = {}
    for kind in KINDS:
        for dtype in ("float64", "float32"):
            rm = pyspmv.portable(fitted(kind), "cpu")
            if dtype in rm.tables:
                name = f"{kind}_{dtype[5:]}"
                pyspmv.export_c(rm, tmp_path / f"{name}.h", dtype=dtype)
                rms[name] = (kind, dtype, rm.table(dtype).ranked().config_ids)
    includes = "\n".join(f'#define {n}_IMPLEMENTATION\n#include "{n}.h"' for n in rms)
    calls = "\n".join(f'    if (rc == 0) rc = run("{n}", {n}_NCONFIGS, {n}_config_ids, {n}_rank, {n}_predict, nr, nc, '
                      "ip, ix);" for n in rms)
    first = next(iter(rms))
    (tmp_path / "driver.c").write_text(DRIVER % {"includes": includes, "calls": calls, "n0": f"{first}_NCONFIGS",
                                                 "first": first})
    exe = tmp_path / "driver"
    r = subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-o", str(exe),
                        str(tmp_path / "driver.c"), "-lm"], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    for i, A in enumerate(unseen_matrices()):
        write_csr(tmp_path / "A.txt", A)
        out = subprocess.run([str(exe), str(tmp_path / "A.txt"), *(["bad"] if i == 0 else [])],
                             capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stderr
        lines = pd.DataFrame([ln.split() for ln in out.stdout.splitlines()], columns=["name", "config", "order", "ms"])
        for name, (kind, dtype, ids) in rms.items():
            got = lines[lines.name == name]
            assert got.config.tolist() == ids
            ms = got.ms.astype(float).to_numpy()
            order = got.order.astype(int).to_numpy()
            X = X_of(A, [pyspmv.config(c) for c in ids], dtype)
            m = fitted(kind)
            py = m.rank_scores(X)
            applicable = np.isfinite(X["bytes_moved"].to_numpy())
            assert np.all(ms[~applicable] == np.inf)
            assert rel(ms[applicable], reported(m, X)[applicable]) <= TOL, (name, A.name)
            check_order(order, np.where(applicable, py, np.inf), applicable)
            # and the core through pyspmv.rank gives the same list
            ranked = pyspmv.rank(A, pyspmv.portable(fitted(kind), "cpu"), device="cpu", dtype=dtype)
            assert [c for c, _ in ranked] == [ids[j] for j in order]


def test_rank_options():
    """n_calls adds the conversion fit over the calls; deterministic keeps deterministic configurations."""
    base = pyspmv.portable(fitted("linear"), "cpu")
    rm = pyspmv.RankModel(base.device, base.tables, source=base.source, gpu=base.gpu)  # own meta
    A = unseen_matrices()[1]
    plain = dict(pyspmv.rank(A, rm, device="cpu"))
    with pytest.raises(ValueError, match="conversion-cost"):
        pyspmv.rank(A, rm, device="cpu", n_calls=10)
    rm.meta["convert_ms"] = {f: [0.5, 1e-4] for f in pyspmv.FORMATS}
    rm.__dict__.pop("_ranked", None)
    amort = dict(pyspmv.rank(A, rm, device="cpu", n_calls=10))
    for c, ms in plain.items():
        if np.isfinite(ms):
            assert amort[c] == pytest.approx(ms + (0.5 + 1e-4 * A.nnz) / 10, rel=1e-12)
    det = pyspmv.rank(A, rm, device="cpu", deterministic=True)
    assert det and all(pyspmv.config(c).deterministic for c, _ in det)
    ms = [m for _, m in pyspmv.rank(A, rm, device="cpu")]
    assert ms == sorted(ms)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="n_calls"):
            pyspmv.rank(A, rm, device="cpu", n_calls=bad)


def test_estimators_convert_once_per_fit():
    """rank(A, estimator) reuses the conversion until the estimator is refitted."""
    X, y, g = training()
    m = models.LinearModel(select=False).fit(X, y, g)
    a = pyspmv.portable(m, "cpu")
    assert pyspmv.portable(m, "cpu") is a
    m.fit(X, 2 * y, g)
    b = pyspmv.portable(m, "cpu")
    assert b is not a
    A = unseen_matrices()[0]
    r1, r2 = dict(pyspmv.rank(A, a, device="cpu")), dict(pyspmv.rank(A, m, device="cpu"))
    assert all(r2[c] == pytest.approx(2 * r1[c], rel=1e-9) for c in r1 if np.isfinite(r1[c]))


def test_unknown_device_and_dtype_are_errors():
    rm = pyspmv.portable(fitted("linear"), "cpu")
    A = unseen_matrices()[0]
    with pytest.raises(ValueError, match="'device' parameter of rank"):
        pyspmv.rank(A, rm, device="tpu")
    with pytest.raises(ValueError, match="ranks 'cpu' configurations"):
        pyspmv.rank(A, rm, device="cuda")
    with pytest.raises(ValueError, match="'dtype' parameter"):
        pyspmv.rank(A, rm, device="cpu", dtype="float16")
    with pytest.raises(ValueError, match="'device' parameter of default_model"):
        pyspmv.default_model("gpu")
    with pytest.raises(TypeError, match="exportable"):
        pyspmv.portable(object(), "cpu")
    with pytest.raises(ValueError, match="'name' parameter of export_c"):
        pyspmv.export_c(rm, "x.h", name="not an identifier")


@pytest.mark.parametrize("kind", ["boosted", "knn", "cascade"])
def test_save_load_round_trip(tmp_path, kind):
    m = fitted(kind)
    path = pyspmv.save_model(m, tmp_path / "m.pyspmv", device="cpu")
    rm = pyspmv.load_model(path)
    X, _, _ = training()
    py, c = reported(m, X), rm.predict(X)
    fin = np.isfinite(py)
    assert rel(c[fin], py[fin]) <= TOL
    assert rm.device == "cpu" and type(m).__name__ in rm.source


def test_model_files_are_lzma_zips_and_deflated_ones_still_load(tmp_path):
    """save_model compresses with LZMA where Python has it; a file np.savez_compressed wrote (the
    earlier format) loads to the same model."""
    import zipfile
    m = fitted("boosted")
    path = pyspmv.save_model(m, tmp_path / "m.pyspmv", device="cpu")
    with zipfile.ZipFile(path) as zf:
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_LZMA}
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    np.savez_compressed(tmp_path / "old.npz", **arrays)
    X, _, _ = training()
    np.testing.assert_array_equal(pyspmv.load_model(tmp_path / "old.npz").predict(X), pyspmv.load_model(path).predict(X))


def _rewrite(src, dst, edit_header=None, edit_arrays=None):
    """Copy a model file, editing its JSON header and/or arrays."""
    with np.load(src, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(bytes(arrays.pop("header.json")).decode())
    if edit_header:
        edit_header(header)
    if edit_arrays:
        edit_arrays(arrays)
    np.savez(dst, **{"header.json": np.frombuffer(json.dumps(header).encode(), np.uint8)}, **arrays)
    return dst


def test_mismatches_and_corrupt_files_are_clear_errors(tmp_path):
    """Acceptance 2: schema and configuration mismatches, newer versions, corrupt files."""
    src = pyspmv.save_model(fitted("boosted"), tmp_path / "ok.pyspmv", device="cpu")

    def renamed_feature(h):
        h["feature_names"][3] = "densitee"

    def unknown_config(h):
        h["tables"]["float64"]["config_ids"][0] = "cpu/csr/quantum"

    def other_device(h):
        h["tables"]["float64"]["config_ids"][0] = "pyspmv/csr/scalar/bs=256"

    def newer(h):
        h["version"] = 99

    def bad_device(h):
        h["device"] = "tpu"

    cases = [(renamed_feature, "another feature schema"), (unknown_config, "unknown to this pyspmv"),
             (other_device, "of device 'cuda'"), (newer, "format version 99"), (bad_device, "names device 'tpu'")]
    for i, (edit, msg) in enumerate(cases):
        with pytest.raises(ValueError, match=msg):
            pyspmv.load_model(_rewrite(src, tmp_path / f"h{i}.npz", edit_header=edit))

    def child_out_of_range(a):
        a["float64/spec/trees.left"][a["float64/spec/trees.left"] > 0] += 10 ** 6

    def short_array(a):
        a["float64/spec/trees.root"] = a["float64/spec/trees.root"][:-1]

    for i, (edit, msg) in enumerate([(child_out_of_range, "model check"), (short_array, "trees.root")]):
        with pytest.raises(ValueError, match=msg):
            pyspmv.load_model(_rewrite(src, tmp_path / f"a{i}.npz", edit_arrays=edit))

    (tmp_path / "text.pyspmv").write_text("not a model")
    truncated = tmp_path / "trunc.pyspmv"
    truncated.write_bytes(src.read_bytes()[:200])
    with zipfile.ZipFile(tmp_path / "nohdr.pyspmv", "w") as z:
        z.writestr("x.npy", b"junk")
    for p in ("text.pyspmv", "trunc.pyspmv", "nohdr.pyspmv"):
        with pytest.raises(ValueError, match="not a pyspmv model file or is corrupt"):
            pyspmv.load_model(tmp_path / p)
    with pytest.raises(FileNotFoundError):
        pyspmv.load_model(tmp_path / "absent.pyspmv")
