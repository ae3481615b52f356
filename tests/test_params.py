"""The declared parameter constraints and their one validator (pyspmv._params), and the facts written once
that Python shares with the C core (KNN weighting codes) or across modules (value sizes, design columns)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import pyspmv
from pyspmv._atomic import write_atomically
from pyspmv._params import AnyOf, InstanceOf, Interval, OneOf, Satisfies, either, validate
from pyspmv.matrices.features import DESIGN_COLUMNS, X_COLUMNS
from pyspmv.ranking.schema import spec_fields
from pyspmv.ranking.spec import KNN_WEIGHTING

ROOT = Path(__file__).resolve().parents[1]


def fails(fn, table, values, error=ValueError):
    with pytest.raises(error) as info:
        validate(fn, table, values)
    return str(info.value)


def test_one_of_says_the_options_in_the_style_asked():
    assert fails("f()", {"d": OneOf(("cpu", "cuda"))}, {"d": "gpu"}) == \
        "The 'd' parameter of f() must be one of ('cpu', 'cuda'). Got 'gpu' instead."
    assert fails("f()", {"d": OneOf(("cpu", "cuda", None), "or")}, {"d": 1}) == \
        "The 'd' parameter of f() must be 'cpu', 'cuda' or None. Got 1 instead."
    assert fails("M", {"p": OneOf(("a", "b"), "list")}, {"p": "c"}) == \
        "The 'p' parameter of M must be one of 'a', 'b'. Got 'c' instead."
    assert fails(None, {"m": OneOf(("a", "b"), "names")}, {"m": "c"}) == \
        "The 'm' parameter must be one of a, b. Got 'c' instead."
    validate("f()", {"d": OneOf(("cpu", "cuda"))}, {"d": "cuda"})


def test_one_of_refuses_an_unhashable_or_array_value_with_its_message():
    assert "must be one of" in fails("f()", {"d": OneOf(("cpu",))}, {"d": np.arange(3)})


def test_interval_bounds_kinds_and_notes():
    one = {"n": Interval("int", 1)}
    validate("f()", one, {"n": 3})
    validate("f()", one, {"n": np.int64(3)})
    for bad in (0, 1.5, True, "2", None):
        assert fails("f()", one, {"n": bad}) == f"The 'n' parameter of f() must be an int >= 1. Got {bad!r} instead."
    validate("f()", {"v": Interval("int", 0, bools=True)}, {"v": True})
    assert "must be a float in [0, 1)" in fails("M", {"t": Interval("float", 0, 1)}, {"t": 1.0})
    validate("M", {"t": Interval("float", 0, 1)}, {"t": np.float32(0.5)})
    assert "Got '0.5' instead" in fails("M", {"t": Interval("float", 0, 1)}, {"t": "0.5"})
    assert "must be in (0, 1)" in fails("f()", {"s": Interval(None, 0, 1, "neither")}, {"s": 0})
    assert "must be a number > 0" in fails("f()", {"x": Interval("number", 0, closed="neither")}, {"x": np.nan})
    assert fails("f()", {"t": Interval(None, 0, closed="neither", note=" s")}, {"t": -1}) == \
        "The 't' parameter of f() must be > 0 s. Got -1 instead."
    assert "must be <= 2" in fails("f()", {"x": Interval(None, high=2, closed="both")}, {"x": 3})
    assert "an int in [1, 4096]" in fails("f()", {"b": Interval("int", 1, 4096, "both")}, {"b": 4097})


def test_a_value_that_cannot_be_compared_is_a_type_error_with_the_message():
    msg = fails("f()", {"t": Interval(None, 0, closed="neither")}, {"t": "x"}, TypeError)
    assert msg == "The 't' parameter of f() must be > 0. Got 'x' instead."


def test_instance_of_any_of_and_satisfies():
    flag = {"r": InstanceOf((bool, np.bool_), "True or False")}
    assert fails("Op()", flag, {"r": 1}, TypeError) == "The 'r' parameter of Op() must be True or False. Got 1 instead."
    typed = {"c": InstanceOf(str, "a configuration id", by_type=True)}
    assert fails("Op()", typed, {"c": 3}, TypeError).endswith("Got int instead.")
    n = {"n": AnyOf((Interval("int", 1), OneOf(("auto",), "or")))}
    validate("F", n, {"n": "auto"})
    assert fails("F", n, {"n": 0}) == "The 'n' parameter of F must be an int >= 1 or 'auto'. Got 0 instead."
    even = {"k": Satisfies(lambda v: v % 2 == 0, "even", TypeError)}
    assert fails("f()", even, {"k": 3}, TypeError) == "The 'k' parameter of f() must be even. Got 3 instead."


def test_the_first_failing_parameter_in_table_order_is_named():
    table = {"a": Interval("int", 0), "b": Interval("int", 0)}
    assert "'a'" in fails("f()", table, {"a": -1, "b": -1})
    assert either(["x"]) == "'x'"


def test_public_functions_keep_their_messages():
    with pytest.raises(ValueError, match=r"The 'device' parameter of configs\(\) must be one of \('cpu', 'cuda'\)"):
        pyspmv.configs("tpu")
    with pytest.raises(ValueError, match=r"The 'repeats' parameter of benchmark\(\) must be an int >= 1. Got 0"):
        pyspmv.benchmark(pyspmv.generate("poisson2d", 4), repeats=0)


def test_knn_weighting_codes_agree_with_the_core():
    """spec.KNN_WEIGHTING is Python's one copy of csrc/spmv.h's SPMV_KNN_* (the core exports no names for
    them): the header's enum order and the field's range must say the same."""
    enum = re.search(r"enum\s*\{\s*(SPMV_KNN_UNIFORM[^}]*)\}", (ROOT / "csrc" / "spmv.h").read_text())
    assert enum is not None
    names = [re.sub(r"\s*=.*", "", n).strip().removeprefix("SPMV_KNN_").lower() for n in enum.group(1).split(",")]
    assert KNN_WEIGHTING == {n: i for i, n in enumerate(names)}
    field = next(f for f in spec_fields("knn") if f.name == "knn.weighting")
    assert (field.lo, field.hi) == (min(KNN_WEIGHTING.values()), max(KNN_WEIGHTING.values()))


def test_design_columns_are_the_cores_row_with_the_labels():
    labels = [c for c in X_COLUMNS if c not in DESIGN_COLUMNS]
    assert labels == ["config", "library", "format", "kernel"]
    assert [c for c in X_COLUMNS if c in DESIGN_COLUMNS] == list(DESIGN_COLUMNS)
    assert pyspmv.datasets.X_COLUMNS == X_COLUMNS


def test_an_atomic_write_leaves_the_old_file_or_the_new_one(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("old")

    def broken(tmp):
        Path(tmp).write_text("half")
        raise OSError("disk full")
    with pytest.raises(OSError, match="disk full"):
        write_atomically(path, broken, ".txt")
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]
    write_atomically(path, lambda tmp: Path(tmp).write_text("new"))
    assert path.read_text() == "new"
    assert path.stat().st_mode & 0o777 == 0o644


def test_back_to_back_is_checked_and_agrees_with_the_core():
    """benchmark(back_to_back=...): an int in [1, MAX_BACK_TO_BACK], the core's SPMV_CUDA_MAX_RUN (its one other
    copy, kernels/spmv_cuda.h), and more than 1 only on the GPU."""
    from pyspmv.devices.benchmark import MAX_BACK_TO_BACK
    limit = re.search(r"#define SPMV_CUDA_MAX_RUN (\d+)", (ROOT / "kernels" / "spmv_cuda.h").read_text())
    assert limit is not None and int(limit.group(1)) == MAX_BACK_TO_BACK
    A = pyspmv.generate("poisson2d", 4)
    for bad in (0, MAX_BACK_TO_BACK + 1, 2.0):
        with pytest.raises(ValueError, match=r"The 'back_to_back' parameter of benchmark\(\) must be an int in "
                                             rf"\[1, {MAX_BACK_TO_BACK}\]"):
            pyspmv.benchmark(A, back_to_back=bad)
    with pytest.raises(ValueError, match=r"'back_to_back' parameter of benchmark\(\) must be 1 on device='cpu'"):
        pyspmv.benchmark(A, back_to_back=4)
