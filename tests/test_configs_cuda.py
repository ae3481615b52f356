"""The CUDA configuration space and per-configuration features: no GPU needed."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import re
from pathlib import Path

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


#: What each cuSPARSE kernel of the registry stands for (csrc/kernels.def, kernels/cusparse.cu), written out
#: once more here on purpose: a changed line of the registry has to change this table too.
CUSPARSE = {
    "cusparse/csr/default": ("CUSPARSE_FORMAT_CSR", "CUSPARSE_SPMV_ALG_DEFAULT"),
    "cusparse/csr/alg1": ("CUSPARSE_FORMAT_CSR", "CUSPARSE_SPMV_CSR_ALG1"),
    "cusparse/csr/alg2": ("CUSPARSE_FORMAT_CSR", "CUSPARSE_SPMV_CSR_ALG2"),
    "cusparse/coo/alg1": ("CUSPARSE_FORMAT_COO", "CUSPARSE_SPMV_COO_ALG1"),
    "cusparse/coo/alg2": ("CUSPARSE_FORMAT_COO", "CUSPARSE_SPMV_COO_ALG2"),
    "cusparse/sell/alg1": ("CUSPARSE_FORMAT_SLICED_ELLPACK", "CUSPARSE_SPMV_SELL_ALG1"),
    "cusparse/bsr": ("CUSPARSE_FORMAT_BSR", "CUSPARSE_SPMV_BSR_ALG1"),
}


def test_every_cusparse_config_names_cusparses_format_and_algorithm():
    """Config.cusparse_format / cusparse_alg: the enumerators each cuSPARSE configuration passes, None elsewhere."""
    cs = pyspmv.configs("cuda") + pyspmv.configs("cpu")
    cus = [c for c in cs if c.library == "cusparse"]
    assert {c.kernel_id for c in cus} == set(CUSPARSE) and len(cus) == 10
    for c in cus:
        assert (c.cusparse_format, c.cusparse_alg) == CUSPARSE[c.kernel_id], c.id
        assert pyspmv.config(c.id) == c and pyspmv.config(c.id).cusparse_alg == c.cusparse_alg
    assert all(c.cusparse_format is None and c.cusparse_alg is None for c in cs if c.library != "cusparse")
    assert "cusparse_alg='CUSPARSE_SPMV_CSR_ALG2'" in repr(pyspmv.config("cusparse/csr/alg2"))


def test_cusparse_names_are_cusparse_h_enumerators():
    """Where the CUDA toolkit's cusparse.h is found, every name is one of its enumerators (the build checks the
    same where it compiles kernels/cusparse.cu)."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda", "/usr"]
    header = next((os.path.join(r, "include", "cusparse.h") for r in roots
                   if r and os.path.isfile(os.path.join(r, "include", "cusparse.h"))), None)
    if header is None:
        pytest.skip("no cusparse.h found (CUDA_HOME, CUDA_PATH, /usr/local/cuda, /usr)")
    with open(header, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for fmt, alg in CUSPARSE.values():
        assert re.search(rf"\b{fmt}\s*=", text) and re.search(rf"\b{alg}\s*=", text), (fmt, alg)


def test_the_guide_lists_what_config_says():
    """docs/guide/formats.md's table of cuSPARSE configurations names the enumerators Config gives."""
    guide = Path(__file__).resolve().parents[1] / "docs" / "guide" / "formats.md"
    rows = {m.group(1): (m.group(2), m.group(3)) for m in re.finditer(
        r"^\| `(cusparse/[a-z0-9]+(?:/default|/alg\d)?)[^`]*` \| `(CUSPARSE_FORMAT_\w+)`[^|]*\| `(CUSPARSE_SPMV_\w+)`",
        guide.read_text(encoding="utf-8"), re.MULTILINE)}
    assert rows == CUSPARSE


def test_config_ids_round_trip():
    for c in pyspmv.configs("cuda") + pyspmv.configs("cpu"):
        again = pyspmv.config(c.id)
        assert again.id == c.id and again.launch == c.launch and again.format_params == c.format_params


def test_launch_and_format_parameters():
    c = pyspmv.config("pyspmv/sell/c=64/sigma=256/bs=512")
    assert c.format_kwargs == {"c": 64, "sigma": 256} and c.launch[1] == 512
    v = pyspmv.config("pyspmv/csr/vector/tpv=16/bs=64")
    assert v.launch == (16, 64) and v.format_kwargs == {"order": 0, "vals": 0}
    assert pyspmv.config("pyspmv/csr/vector").launch == (8, 256)  # defaults
    assert pyspmv.config("cusparse/sell/alg1/c=8").format_kwargs == {"c": 8, "sigma": 1}
    with pytest.raises(ValueError, match="'tpv' is not a parameter"):
        pyspmv.config("pyspmv/ell/tpv=4")


def test_adaptive_entries_per_thread_is_an_axis():
    """csr/adaptive's ept (entries a thread streams per work item) rides in the launch's tpv slot; 8, its first
    value, is never printed, so every published id stays; the grid holds 4 and 8."""
    assert pyspmv.config("pyspmv/csr/adaptive/bs=64").launch == (8, 64)
    c = pyspmv.config("pyspmv/csr/adaptive/order=1/vals=8/ept=4/bs=64")
    assert c.launch == (4, 64) and c.params == {"order": 1, "vals": 8, "ept": 4, "bs": 64}
    assert pyspmv.config("pyspmv/csr/adaptive/ept=8/bs=64").id == "pyspmv/csr/adaptive/bs=64"
    ids = [g.id for g in pyspmv.configs("cuda") if g.kernel_id == "pyspmv/csr/adaptive"]
    assert len(ids) == 2 * 3 * 2 * 5 and sum("ept=4" in i for i in ids) == len(ids) // 2
    with pytest.raises(ValueError, match="parameter 'ept' of pyspmv/csr/adaptive must be one of 8, 4"):
        pyspmv.config("pyspmv/csr/adaptive/ept=3/bs=64")
    with pytest.raises(ValueError, match="'ept' is not a parameter of pyspmv/csr/vector"):
        pyspmv.config("pyspmv/csr/vector/ept=4")
    # the design rows read no column of it: the shipped models see the ept=8 rows as before
    f = pyspmv.config_features(pyspmv.generate("poisson2d", 20), ["pyspmv/csr/adaptive/bs=64",
                                                                  "pyspmv/csr/adaptive/ept=4/bs=64"])
    assert f.iloc[0].equals(f.iloc[1])


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
