"""Hostile model files (issue 11): every corrupt or crafted file is a ValueError naming the field, and a
header exported from a file that loads carries nothing but the numbers and identifiers pyspmv made."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import io
import json
import shutil
import subprocess
import zipfile
from functools import cache

import numpy as np
import pytest
from modeldata import cpu_frame

import pyspmv
from pyspmv import models
from pyspmv.ranking.modelfile import read_model

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
NM, READELF = shutil.which("nm"), shutil.which("readelf")
EVIL = 'x */ __attribute__((constructor)) static void pwn(void) { system("touch pwned"); } /* '
EVIL_KEY = "ngroups = 1 }; int pwned_global = 1; static const spmv_model q = { .kind"


@cache
def fitted() -> dict[str, object]:
    """Every model kind fitted on the small CPU frame (fast settings), with conversion times."""
    d = cpu_frame()
    conv = 0.01 + 1e-6 * d.X["nnz"].to_numpy()
    kinds = {"linear": models.LinearModel(), "boosted": models.BoostedModel(n_estimators=10, max_depth=2),
             "knn": models.KNNModel(n_passes=1), "guo": models.GuoModel(), "wang": models.WangModel(),
             "svm": models.SVMModel(C_grid=(1.0,), gamma_grid=(1.0,)), "cascade": models.CascadeModel(n_estimators=5),
             "forest": models.ForestModel(n_estimators=4)}
    return {k: m.fit(d.X, d.y, d.groups, convert_ms=conv) for k, m in kinds.items()}


def read(path) -> tuple[dict, dict[str, np.ndarray]]:
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return json.loads(bytes(arrays.pop("header.json")).decode()), arrays


def write(path, header, arrays) -> object:
    with open(path, "wb") as f:                              # np.savez would add .npz to a path
        np.savez(f, **{"header.json": np.frombuffer(json.dumps(header).encode(), np.uint8)}, **arrays)
    return path


@pytest.fixture
def src(tmp_path):
    return pyspmv.save_model(fitted()["linear"], tmp_path / "ok.pyspmv", device="cpu")


def edited(src, tmp_path, edit_header=None, edit_arrays=None, name="bad.pyspmv"):
    h, a = read(src)
    if edit_header:
        edit_header(h)
    if edit_arrays:
        edit_arrays(a)
    return write(tmp_path / name, h, a)


def spec(h):
    return h["tables"]["float64"]["spec"]["scalars"]


HEADER_CASES = {
    "key_name": (lambda h: spec(h).__setitem__(EVIL_KEY, 1), "does not have"),
    "bool_ngroups": (lambda h: spec(h).__setitem__("ngroups", True), "'ngroups'"),
    "float_ninputs": (lambda h: spec(h).__setitem__("ninputs", 2.5), "'ninputs'"),
    "string_out_lo": (lambda h: spec(h).__setitem__("out_lo", "0); system(\"x\"); (0"), "'out_lo'"),
    "nan_out_lo": (lambda h: spec(h).__setitem__("out_lo", float("nan")), "'out_lo'"),
    "bad_out_tf": (lambda h: spec(h).__setitem__("out_tf", 77), "'out_tf'"),
    "rank_bytes_pow_past_one": (lambda h: spec(h).__setitem__("rank_bytes_pow", 2.0), r"rank_bytes_pow = 2 is outside \[0, 1\]"),
    "rank_bytes_pow_negative": (lambda h: spec(h).__setitem__("rank_bytes_pow", -0.5), "rank_bytes_pow"),
    "rank_bytes_pow_nan": (lambda h: spec(h).__setitem__("rank_bytes_pow", float("nan")), "'rank_bytes_pow'"),
    "rank_bytes_pow_string": (lambda h: spec(h).__setitem__("rank_bytes_pow", "1); system(\"x\"); (0"),
                              "'rank_bytes_pow'"),
    "config_id_code": (lambda h: h["tables"]["float64"]["config_ids"].__setitem__(0, 'cpu/csr/rows"; int pwned; //'),
                       "unknown to this pyspmv"),
    "config_id_sell_c3": (lambda h: h["tables"]["float64"]["config_ids"].__setitem__(
        h["tables"]["float64"]["config_ids"].index("cpu/sell/c=8/sigma=64"), "cpu/sell/c=3/sigma=64"),
        "parameter .c. of cpu/sell must be one of 4, 8, 16. Got 3"),
    "config_id_twice": (lambda h: h["tables"]["float64"]["config_ids"].__setitem__(
        1, h["tables"]["float64"]["config_ids"][0]), "twice"),
    "gpu_zero": (lambda h: h.__setitem__("gpu", {"sm_count": 0, "threads_per_sm": 0, "warp_size": 0}), "'sm_count'"),
    "gpu_bool": (lambda h: h["gpu"].__setitem__("warp_size", True), "'warp_size'"),
    "convert_negative": (lambda h: h["meta"].__setitem__("convert_ms", {"csr": [-1e300, 0.0]}), "convert_ms"),
    "convert_nan": (lambda h: h["meta"].__setitem__("convert_ms", {"csr": [float("nan"), 0.0]}), "convert_ms"),
    "convert_format": (lambda h: h["meta"].__setitem__("convert_ms", {"*/evil": [1.0, 0.0]}), "convert_ms"),
    "version_bool": (lambda h: h.__setitem__("version", True), "format version"),
    "kind_unknown": (lambda h: h["tables"]["float64"]["spec"].__setitem__("kind", "*/evil"), "model kind"),
    "source_not_text": (lambda h: h.__setitem__("source", {"a": 1}), "'source'"),
    "tables_not_dict": (lambda h: h.__setitem__("tables", [1]), "'tables'"),
    "dtype_unknown": (lambda h: h["tables"].__setitem__("float16", h["tables"]["float64"]), "float16"),
}


@pytest.mark.parametrize("case", HEADER_CASES)
def test_hostile_headers_are_value_errors_naming_the_field(src, tmp_path, case):
    edit, match = HEADER_CASES[case]
    with pytest.raises(ValueError, match=match):
        pyspmv.load_model(edited(src, tmp_path, edit_header=edit))


ARRAY_CASES = {
    "coef_float32": (lambda a: a.__setitem__("float64/spec/coef", a["float64/spec/coef"].astype(np.float32)), "'coef'"),
    "coef_int64": (lambda a: a.__setitem__("float64/spec/coef", a["float64/spec/coef"].astype(np.int64)), "'coef'"),
    "coef_2d": (lambda a: a.__setitem__("float64/spec/coef", a["float64/spec/coef"].reshape(1, -1)), "'coef'"),
    "coef_short": (lambda a: a.__setitem__("float64/spec/coef", a["float64/spec/coef"][:-1]), "'coef'"),
    "in_col_bool": (lambda a: a.__setitem__("float64/spec/in_col", a["float64/spec/in_col"] > 0), "'in_col'"),
    "group_out_of_range": (lambda a: a["float64/group"].__setitem__(0, 10 ** 6), "'group'"),
    "extra_short": (lambda a: a.__setitem__("float64/extra", a["float64/extra"][:-1]), "'extra'"),
    "stray_array": (lambda a: a.__setitem__("float64/spec/evil", np.zeros(3)), "field 'evil'"),
    "missing_array": (lambda a: a.pop("float64/spec/intercept"), "'intercept'"),
}


@pytest.mark.parametrize("case", ARRAY_CASES)
def test_hostile_arrays_are_value_errors_naming_the_key(src, tmp_path, case):
    edit, match = ARRAY_CASES[case]
    with pytest.raises(ValueError, match=match):
        pyspmv.load_model(edited(src, tmp_path, edit_arrays=edit))


def _leaf(a: dict) -> int:
    return int(np.flatnonzero(a["float64/spec/forest.feature"] < 0)[0])


FOREST_CASES = {
    "value_short": (lambda h, a: a.__setitem__("float64/spec/forest.value", a["float64/spec/forest.value"][:-1]),
                    "'forest.value'"),
    "value_float32": (lambda h, a: a.__setitem__("float64/spec/forest.value",
                                                 a["float64/spec/forest.value"].astype(np.float32)), "'forest.value'"),
    "root_missing": (lambda h, a: a.pop("float64/spec/forest.root"), "'forest.root'"),
    "base_past_nout": (lambda h, a: spec(h).__setitem__("forest.base", spec(h)["forest.nout"]), "forest.base"),
    "base_below": (lambda h, a: spec(h).__setitem__("forest.base", -2), "'forest.base'"),
    "cast_f32_two": (lambda h, a: spec(h).__setitem__("forest.cast_f32", 2), "'forest.cast_f32'"),
    "nleaves_bool": (lambda h, a: spec(h).__setitem__("forest.nleaves", True), "'forest.nleaves'"),
    "leaf_vector_past_end": (lambda h, a: a["float64/spec/forest.left"].__setitem__(
        _leaf(a), spec(h)["forest.nleaves"]), "forest.left"),
    "child_loops_back": (lambda h, a: a["float64/spec/forest.left"].__setitem__(0, 0), "forest: node 0"),
    "feature_past_inputs": (lambda h, a: a["float64/spec/forest.feature"].__setitem__(0, 10 ** 6), "forest.feature"),
    "ngroups_past_nout": (lambda h, a: spec(h).__setitem__("forest.nout", 1) or a.__setitem__(
        "float64/spec/forest.value", a["float64/spec/forest.value"][:spec(h)["forest.nleaves"]]), "nout"),
}


@pytest.mark.parametrize("case", FOREST_CASES)
def test_hostile_forest_files_are_value_errors_naming_the_key(tmp_path, case):
    """The whole-matrix kind's schema (pyspmv.portable) and spmv_model_check refuse a crafted forest."""
    good = pyspmv.save_model(fitted()["forest"], tmp_path / "forest.pyspmv", device="cpu")
    edit, match = FOREST_CASES[case]
    h, a = read(good)
    edit(h, a)
    with pytest.raises(ValueError, match=match):
        pyspmv.load_model(write(tmp_path / "bad.pyspmv", h, a))


def _npy(header: str, payload: bytes = b"") -> bytes:
    h = header.encode()
    h += b" " * (63 - (10 + len(h)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h + payload


def test_corrupt_archives_are_value_errors(src, tmp_path):
    raw = src.read_bytes()
    files = {"truncated": raw[: len(raw) // 2], "empty": b"", "text": b"not a model"}
    z = bytearray(pyspmv.save_model(fitted()["linear"], tmp_path / "c.pyspmv", device="cpu").read_bytes())
    z[len(z) // 3: len(z) // 3 + 64] = bytes(64)                   # inside a deflate stream: zlib.error / CRC
    files["deflate"] = bytes(z)
    for what, member in (("bomb", _npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }")),
                         ("object", _npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", b"\x80\x04N.")),
                         ("overflow", _npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2**70,), }"))):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("header.json.npy", _npy("{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", b"{}"))
            zf.writestr("float64/spec/coef.npy", member)
        files[what] = buf.getvalue()
    files["pickle"] = b"\x80\x04\x95" + bytes(20)
    for what, data in files.items():
        p = tmp_path / f"{what}.pyspmv"
        p.write_bytes(data)
        with pytest.raises(ValueError, match="not a pyspmv model file or is corrupt") as e:
            pyspmv.load_model(p)
        if what in ("bomb", "object", "overflow"):
            assert "'float64/spec/coef'" in str(e.value), what
    assert "pickle" in str(pytest.raises(ValueError, pyspmv.load_model, tmp_path / "pickle.pyspmv").value)


def test_big_endian_arrays_are_read_as_numbers(src, tmp_path):
    """A file written on (or crafted as) a big-endian machine predicts what the native one does."""
    def swap(a):
        for k, v in a.items():
            a[k] = v.astype(v.dtype.newbyteorder(">"))
    for kind in ("linear", "boosted", "knn"):
        path = pyspmv.save_model(fitted()[kind], tmp_path / f"{kind}.pyspmv", device="cpu")
        big = pyspmv.load_model(edited(path, tmp_path, edit_arrays=swap, name=f"{kind}_be.pyspmv"))
        ref = pyspmv.load_model(path)
        X = cpu_frame().X
        p, q = big.predict(X), ref.predict(X)
        assert np.all(np.isfinite(q)) and np.array_equal(p, q), kind


def test_export_name_must_be_a_safe_identifier():
    rm = pyspmv.portable(fitted()["linear"], "cpu")
    for bad in ("spmv", "SPMV", "Spmv_x", "pyspmv_m", "int", "static", "_x", "a__b", "x; int pwned", "1x", "",
                "x" * 41, "a_", 3):
        with pytest.raises(ValueError, match="'name' parameter of export_c"):
            pyspmv.export_c(rm, "unused.h", name=bad)


@pytest.mark.skipif(CC is None or NM is None or READELF is None, reason="needs cc, nm and readelf on PATH")
def test_headers_from_hostile_files_compile_to_nothing_but_the_model(src, tmp_path):
    """Code in the source and meta text of a file that loads does not reach the header: compiled with
    -std=c99 -Werror -Wall -Wextra, the object defines only the header's static symbols, its own functions and
    ids, and one caller, no constructor, and calls nothing but libm/libc helpers."""
    def evil(h):
        h["source"] = EVIL
        h["meta"]["note"] = EVIL
        h["meta"][EVIL] = {EVIL: [EVIL]}
    path = edited(src, tmp_path, edit_header=evil, name="evil.pyspmv")
    rm = pyspmv.load_model(path)
    assert rm.source == EVIL                                  # kept as data, never written into C
    hdr = pyspmv.export_c(rm, tmp_path / "evil.h", dtype="float64")
    text = hdr.read_text()
    for s in ("pwn", "system(", "constructor", "pwned", EVIL.strip()[:20]):
        assert s not in text, s
    (tmp_path / "use.c").write_text('#define evil_IMPLEMENTATION\n#include "evil.h"\n'
                                    "int use(const int32_t *ip, const int32_t *ix, int *order, double *ms);\n"
                                    "int use(const int32_t *ip, const int32_t *ix, int *order, double *ms) {\n"
                                    "    return evil_rank(1, 1, ip, ix, order, ms) + (int)evil_config_ids[0][0];\n}\n")
    obj = tmp_path / "use.o"
    r = subprocess.run([CC, "-std=c99", "-Werror", "-Wall", "-Wextra", "-c", "-o", str(obj), str(tmp_path / "use.c")],
                       capture_output=True, text=True, check=False, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    syms = [ln.split() for ln in subprocess.run([NM, str(obj)], capture_output=True, text=True,
                                                check=True).stdout.splitlines()]
    defined_global = {s[-1] for s in syms if len(s) == 3 and s[1].isupper() and s[1] != "U"}
    undefined = {s[-1] for s in syms if s[-2] == "U"}
    # only the caller and the header's own three: the core's functions are all static
    assert defined_global == {"use", "evil_rank", "evil_predict", "evil_config_ids"}, defined_global
    assert not undefined & {"system", "popen", "execl", "execv", "execve", "fork", "dlopen"}, undefined
    assert not [s for s in syms if "pwn" in s[-1] or "pwned" in s[-1]]
    sections = subprocess.run([READELF, "-S", "-W", str(obj)], capture_output=True, text=True, check=True).stdout
    assert ".init_array" not in sections and ".ctors" not in sections


def test_rank_n_calls_with_a_user_fitted_model():
    """The user guide's call (docs/guide/ranking.md), with a model the user fitted: conversion costs from fit's
    convert_ms (or, without them, the default model's, said so in meta); float32 on a float64-only model names both."""
    d = cpu_frame()
    A = pyspmv.generate("random", 300, seed=4)
    for m in (fitted()["knn"], fitted()["linear"]):
        plain = dict(pyspmv.rank(A, model=m, device="cpu", dtype="float64"))
        amort = dict(pyspmv.rank(A, model=m, device="cpu", dtype="float64", n_calls=50, deterministic=True))
        fit = m.convert_ms_
        for c, ms in amort.items():
            a, b = fit[pyspmv.config(c).format]
            assert ms == pytest.approx(plain[c] + (a + b * A.nnz) / 50, rel=1e-9)
    bare = models.LinearModel(select=False).fit(d.X, d.y, d.groups)
    assert bare.convert_ms_ is None
    rm = pyspmv.portable(bare, "cpu")
    assert rm.meta["convert_ms"] == pyspmv.default_model("cpu").meta["convert_ms"] and "convert_ms_from" in rm.meta
    assert pyspmv.rank(A, model=bare, device="cpu", dtype="float64", n_calls=50, deterministic=True)
    with pytest.raises(ValueError, match=r"'dtype' parameter.*\['float64'\].*'float32'"):
        pyspmv.rank(A, model=bare, device="cpu", dtype="float32", n_calls=50)
    X32 = d.X.assign(value_bytes=4.0)
    both = models.LinearModel(select=False).fit(
        __import__("pandas").concat([d.X, X32], ignore_index=True), np.concatenate([d.y, d.y]),
        np.concatenate([d.groups, d.groups]))
    assert both.value_types_ == ["float32", "float64"]
    assert pyspmv.rank(A, model=both, device="cpu", dtype="float32", n_calls=50)


@pytest.mark.parametrize("kind", ["linear", "boosted", "knn", "guo", "wang", "svm", "cascade", "forest"])
def test_save_load_round_trip_of_every_kind(tmp_path, kind):
    m = fitted()[kind]
    rm = pyspmv.load_model(pyspmv.save_model(m, tmp_path / f"{kind}.pyspmv"))
    X = cpu_frame().X
    py, c = m.rank_scores(X), rm.predict(X)
    fin = np.isfinite(py)
    assert fin.any() and np.allclose(c[fin], py[fin], rtol=1e-9, atol=0)
    assert rm.meta["convert_ms"] == m.convert_ms_ and type(m).__name__ in rm.source
    assert read_model(tmp_path / f"{kind}.pyspmv").tables.keys() == rm.tables.keys()


def test_progress_only_when_verbose(capsys):
    d = cpu_frame()
    models.KNNModel(n_passes=1).fit(d.X, d.y, d.groups)
    models.BoostedModel(n_estimators=5).fit(d.X, d.y, d.groups)
    assert capsys.readouterr().err == ""
    models.KNNModel(n_passes=1, verbose=1).fit(d.X, d.y, d.groups)
    models.BoostedModel(n_estimators=5, verbose=1).fit(d.X, d.y, d.groups)
    err = capsys.readouterr().err
    assert "KNNModel" in err and "BoostedModel" in err
    with pytest.raises(ValueError, match="'verbose'"):
        models.LinearModel(verbose=-1).fit(d.X, d.y, d.groups)


def test_only_regular_files_of_bounded_size_are_read(tmp_path, monkeypatch):
    """Issue 45 (6): load_model('/dev/zero') read without bound (11.6 GB in 16 s) and a FIFO blocked for ever;
    also behind a symlink (a calibrated model that links to a device)."""
    import os

    from pyspmv.ranking import modelfile

    fifo = tmp_path / "fifo.pyspmv"
    os.mkfifo(fifo)
    link = tmp_path / "link.pyspmv"
    link.symlink_to("/dev/zero")
    for p in ("/dev/zero", fifo, link):
        with pytest.raises(ValueError, match="not a regular file"):
            pyspmv.load_model(p)
    with pytest.raises(ValueError, match="is a directory"):
        pyspmv.load_model(tmp_path)
    good = tmp_path / "m.pyspmv"
    pyspmv.save_model(pyspmv.default_model("cpu"), good)
    size = good.stat().st_size
    monkeypatch.setattr(modelfile, "MAX_FILE_BYTES", size - 1)
    with pytest.raises(ValueError, match=f"holds {size} bytes, past {size - 1}"):
        pyspmv.load_model(good)
    monkeypatch.setattr(modelfile, "MAX_FILE_BYTES", size)
    assert pyspmv.load_model(good).device == "cpu"
