"""The CUDA configuration space and per-configuration features: no GPU needed."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest

import pyspmv


def test_cuda_configs_listed_without_gpu():
    cs = pyspmv.configs("cuda")
    ids = [c.id for c in cs]
    assert len(ids) == len(set(ids)) > 100
    assert "pyspmv/csr/vector/tpv=8/bs=256" in ids and "cusparse/csr/alg2" in ids
    assert {c.library for c in cs} == {"pyspmv", "cusparse"}
    assert all(c.device == "cuda" and c.launches >= 1 for c in cs)


def test_config_ids_round_trip():
    for c in pyspmv.configs("cuda") + pyspmv.configs("cpu"):
        again = pyspmv.config(c.id)
        assert again.id == c.id and again.launch == c.launch and again.format_params == c.format_params


def test_launch_and_format_parameters():
    c = pyspmv.config("pyspmv/sell/c=64/sigma=256/bs=512")
    assert c.format_kwargs == {"c": 64, "sigma": 256} and c.launch[1] == 512
    v = pyspmv.config("pyspmv/csr/vector/tpv=16/bs=64")
    assert v.launch == (16, 64) and v.format_kwargs == {}
    assert pyspmv.config("pyspmv/csr/vector").launch == (8, 256)  # defaults
    assert pyspmv.config("cusparse/sell/alg1/c=8").format_kwargs == {"c": 8, "sigma": 1}
    with pytest.raises(ValueError, match="'tpv' is not a parameter"):
        pyspmv.config("pyspmv/ell/tpv=4")


def test_config_features():
    M = pyspmv.generate("poisson2d", 30)  # 900 rows, 4380 entries, ELL width 5
    ids = ["pyspmv/csr/scalar/bs=128", "pyspmv/ell/bs=128", "pyspmv/dia/bs=128", "cusparse/coo/alg1"]
    f = pyspmv.config_features(M, ids, dtype="float64")
    n, nnz = M.nrows, M.nnz
    assert f.loc[ids[0], "bytes_moved"] == 4 * (n + 1) + 12 * nnz + 8 * 2 * n
    assert f.loc[ids[1], "bytes_moved"] == 12 * 5 * n + 16 * n
    assert f.loc[ids[1], "padding_ratio"] == pytest.approx(5 * n / nnz)
    assert f.loc[ids[2], "bytes_moved"] == 4 * 5 + 8 * 5 * n + 16 * n  # offsets + data: no presence bits
    assert f.loc[ids[3], "bytes_moved"] == 16 * nnz + 16 * n and f.loc[ids[3], "launches"] == 2
    assert (f.status == "ok").all()
    f32 = pyspmv.config_features(M, ids[:1], dtype="float32")
    assert f32.bytes_moved.iloc[0] == 4 * (n + 1) + 8 * nnz + 4 * 2 * n


def test_config_features_not_applicable():
    rows = np.r_[np.zeros(500, dtype=int), np.arange(1, 400)]
    import scipy.sparse as sp

    A = sp.csr_array((np.ones(rows.size), (rows, np.r_[np.arange(500), np.zeros(399, dtype=int)])), shape=(400, 500))
    f = pyspmv.config_features(A, ["pyspmv/ell/bs=64"])
    assert f.status.iloc[0] == "not_applicable" and "max_fill" in f.note.iloc[0]
