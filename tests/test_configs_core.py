"""Configurations are the C core's (csrc/config.c): pyspmv.configs is a view of what it parses and expands."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import pyspmv
from pyspmv import _core
from pyspmv.datasets import design_rows
from pyspmv.matrices.configs import DEVICES, PARAM_COLUMNS, config, config_frame, configs
from pyspmv.ranking.portable import guess_device
from pyspmv.ranking.rank import default_model
from pyspmv.ranking.schema import ROW_COLUMNS


#: Parameters added to kernels whose ids were published (csrc/kernels.def's SPMV_PARAM_AXIS): never printed at
#: their default.
AXES = {"order", "vals", "ept"}


def grid_product(device: str) -> list[str]:
    """The ids the registry's grids give, written out here by hand: each kernel, then the product of
    its gridded parameters (first slot outermost), as configs() listed them before the core did."""
    out = []
    for e in _core.kernels():
        if DEVICES[e["device"]] != device:
            continue
        named = [(n, g, d) for n, g, d in zip(e["param_names"], e["grid"], e["param_default"], strict=True) if n and g]
        for values in itertools.product(*(g for _, g, _ in named)):
            out.append(e["id"] + "".join(f"/{n}={v}" for (n, _, d), v in zip(named, values, strict=True)
                                         if not (n in AXES and v == d)))
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_core_expansion_is_the_registry_grid_product(device):
    ids = [c.id for c in configs(device)]
    assert ids == grid_product(device)
    assert len(ids) == len(set(ids)) == {"cpu": 25, "cuda": 344}[device]


@pytest.mark.parametrize("device", DEVICES)
def test_every_id_round_trips_through_the_core(device):
    for c in configs(device):
        again = config(c.id)
        assert again == c and again.id == c.id and again.params == c.params
        assert (again.index, again.slots, again.launch, again.format_params) == (c.index, c.slots, c.launch,
                                                                                  c.format_params)
        assert _core.kernels()[c.index]["id"] == c.kernel_id and c.device == device
        # the design columns are the given parameters, NaN elsewhere
        for name, v in zip(PARAM_COLUMNS, c.param_values, strict=True):
            assert v == c.params[name[2:]] if name[2:] in c.params else np.isnan(v)


def test_canonical_id_orders_parameters_and_keeps_only_given_ones():
    c = config("cpu/sell/sigma=64/c=16")
    assert c.id == "cpu/sell/c=16/sigma=64" and c.params == {"c": 16, "sigma": 64}
    d = config("cpu/sell")
    assert d.id == "cpu/sell" and d.params == {} and d.format_params == (8, 1)
    assert config("cpu/sell/c=008").id == "cpu/sell/c=8"
    h = config("cpu/hyb/k=-3")
    assert h.id == "cpu/hyb/k=-3" and h.format_params == (-3, 0)
    # HYB's k has no design column (kernels.def: SPMV_PARAM_NO_COLUMN), so it stays out of the row
    assert "p_k" not in PARAM_COLUMNS and all(np.isnan(h.param_values))


@pytest.mark.parametrize("cid, message", [
    ("cpu/nope", "Unknown configuration id 'cpu/nope'. Known kernels: cpu/bro_ell, "),
    ("cpu/sell/c=8/q=1", ("Configuration 'cpu/sell/c=8/q=1': 'q' is not a parameter of cpu/sell; it takes "
                          "\\['c', 'sigma'\\].")),
    ("cpu/dia/b=2", "'b' is not a parameter of cpu/dia; it takes none."),
    ("cpu/hyb/k=4-", "parameter 'k' must be an integer \\(ASCII digits, optionally after '-'\\). Got '4-'"),
    ("cpu/hyb/k=2147483648", "parameter 'k' of cpu/hyb must be within int32. Got 2147483648 instead."),
    ("cpu/sell/c=8\x00", "an id holds no NUL character"),
    ("pyspmv/sell/bs=100", "parameter 'bs' of pyspmv/sell must be one of 64, 128, 256, 512, 1024. Got 100"),
])
def test_core_messages(cid, message):
    with pytest.raises(ValueError, match=message):
        config(cid)


def test_a_non_string_is_a_type_error():
    with pytest.raises(TypeError, match="A configuration must be a Config or an id string. Got int"):
        config(5)


def test_config_frame_is_the_core_columns_and_datasets_use_it():
    ids = ["cpu/sell/c=4/sigma=256", "cpu/csr/rows", "pyspmv/csr/vector/tpv=4/bs=64", "cusparse/bsr/b=2"]
    f = config_frame(ids, "float32")
    assert list(f.columns) == ["config", "library", "format", "kernel", *PARAM_COLUMNS, "value_bytes", "launches"]
    assert list(f["library"]) == ["cpu", "cpu", "pyspmv", "cusparse"]
    assert list(f["kernel"]) == ["", "rows", "vector", ""]
    assert f.loc[0, "p_c"] == 4 and f.loc[0, "p_sigma"] == 256 and np.isnan(f.loc[0, "p_bs"])
    assert f.loc[2, "p_tpv"] == 4 and f.loc[2, "p_bs"] == 64 and f.loc[3, "p_b"] == 2
    assert (f["value_bytes"] == 4.0).all() and list(f["launches"]) == [0.0, 0.0, 1.0, 1.0]
    # the datasets' X takes the same columns
    A = pyspmv.generate("poisson2d", 6)
    X = design_rows(pyspmv.features(A), ids, pyspmv.config_features(A, ids), 8.0)
    pd.testing.assert_frame_equal(X[list(f.columns[:-2])], f[list(f.columns[:-2])], check_dtype=False)


def test_device_from_the_configurations_the_model_knows():
    assert guess_device(SimpleNamespace(configs_=pd.DataFrame(index=["cpu/csr/rows", "cpu/sell/c=4/sigma=1"]))) == "cpu"
    assert guess_device(SimpleNamespace(configs_=pd.DataFrame(index=["cusparse/csr/alg2"]))) == "cuda"
    # group keys: an id or a thread mapping, with the value type's suffix
    assert guess_device(SimpleNamespace(groups_=np.array(["cpu/bsr/b=2@f64"], dtype=object))) == "cpu"
    assert guess_device(SimpleNamespace(groups_=np.array(["pyspmv/csr/vector/tpv=4@f32"], dtype=object))) == "cuda"
    # ids the core does not know (a prefix alone no longer decides): the default
    assert guess_device(SimpleNamespace(groups_=np.array(["cpu/zzz@f64"], dtype=object))) == "cuda"


def _spec(ids, group=None):
    """A constant-kind model over ids: the smallest spec model_new takes."""
    rm = default_model("cpu")
    t = rm.table("float64")
    d = {**t.spec.to_dict(), **t.config_arrays(rm.gpu)}
    n = len(ids)
    d.update({"cfg.n": n, "cfg.ids": tuple(ids), "cfg.group": np.zeros(n, np.int32) if group is None else group,
              "cfg.extra": np.zeros(n * d["cfg.nextra"])})
    return d


def test_model_spec_carries_ids_the_core_resolves():
    rm = default_model("cpu")
    t = rm.table("float64")
    spec = {**t.spec.to_dict(), **t.config_arrays(rm.gpu)}
    assert spec["cfg.ids"] == tuple(t.config_ids)
    assert not {"cfg.format", "cfg.param", "cfg.unread", "cfg.p", "cfg.launches"} & set(spec)
    A = pyspmv.generate("poisson2d", 12)
    rows = rm.core_rows(A, "float64")
    X = design_rows(pyspmv.features(A), t.config_ids, pyspmv.config_features(A, t.config_ids), 8.0)
    cols = list(ROW_COLUMNS)
    np.testing.assert_array_equal(rows[:, :len(cols)], X[cols].to_numpy(np.float64))
    with pytest.raises(ValueError, match="cfg.ids holds 2 ids; cfg.n is 3"):
        _core.model_new({**_spec(["cpu/coo", "cpu/ell", "cpu/dia"]), "cfg.ids": ("cpu/coo", "cpu/ell")})
    with pytest.raises(ValueError, match="cfg.ids\\[1\\]: Configuration 'cpu/sell/c=5': parameter 'c' of cpu/sell must be"):
        _core.model_new(_spec(["cpu/coo", "cpu/sell/c=5"]))
    with pytest.raises(TypeError, match="configuration 1 must be an id string without NUL characters. Got 7"):
        _core.model_new(_spec(["cpu/coo", 7]))
    spec = _spec(["cpu/coo"])
    del spec["cfg.ids"]
    with pytest.raises(ValueError, match="cfg.ids"):
        _core.model_new(spec)


def test_exported_header_carries_ids_not_a_table(tmp_path):
    path = pyspmv.export_c(default_model("cpu"), tmp_path / "m.h", name="m", dtype="float64")
    text = path.read_text()
    assert ".ids = m_config_ids" in text
    assert "m_cfg_format" not in text and "m_cfg_p " not in text and "m_cfg_param" not in text


def _sizes_matrices():
    import scipy.sparse as sp
    rng = np.random.default_rng(7)
    R = sp.random_array((300, 200), density=0.03, random_state=rng, format="csr")
    R = sp.csr_array(sp.vstack([R, sp.csr_array((40, 200)), sp.random_array((20, 200), density=0.3,
                                                                             random_state=rng)]))
    return {"poisson": pyspmv.generate("poisson2d", 30), "banded": pyspmv.generate("banded", 500),
            "powerlaw": pyspmv.generate("powerlaw", 800), "rectangular with empty rows": pyspmv.Matrix(R),
            "one row": pyspmv.Matrix(sp.csr_array(np.arange(1.0, 9.0).reshape(1, -1)))}


@pytest.mark.parametrize("name", list(_sizes_matrices()))
def test_sizes_asked_one_configuration_at_a_time_equal_the_whole_grid_s(name):
    """The core's size query skips the pass over every entry where no asked format's size needs it (csrc/design.c,
    spmv_fmt_pattern): every configuration's bytes and padding asked alone (most without the pass) equal those of
    one query of the whole grid (DIA's among them, so with the pass), notes too."""
    M = _sizes_matrices()[name]
    ids = tuple(c.id for d in DEVICES for c in configs(d))
    ids += ("pyspmv/jad/vals=8/bs=256", "pyspmv/jad/vals=16/bs=64", "cpu/jad/vals=8")
    for vb in (4, 8):
        whole = _core.config_sizes(ids, vb, 3.0, M.nrows, M.ncols, M.indptr, M.indices)
        for j, cid in enumerate(ids):
            one = _core.config_sizes((cid,), vb, 3.0, M.nrows, M.ncols, M.indptr, M.indices)
            assert np.array_equal(np.asarray(one[0]), np.asarray(whole[0])[j:j + 1], equal_nan=True), (cid, vb)
            assert np.array_equal(np.asarray(one[1]), np.asarray(whole[1])[j:j + 1], equal_nan=True), (cid, vb)
            assert one[2][0] == whole[2][j], (cid, vb)
