"""The model fields written once: the C core's tables (csrc/model.c, csrc/model_<kind>.c) give the
kinds, the glue's parser, the C check and pyspmv.portable's schema."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest

from pyspmv import _core
from pyspmv.ranking import checks, schema
from pyspmv.ranking.spec import Spec, head, inputs


def test_kinds_are_the_core_list():
    """Codes 0 .. n-1 with nothing past them; the head is kind -1."""
    codes = list(schema.KINDS.values())
    assert codes == list(range(len(codes))) and _core.model_fields(len(codes)) is None
    assert schema.KINDS["constant"] == 0 and _core.model_fields(-1)[0] == "head"


@pytest.mark.parametrize("kind", sorted(schema.KINDS))
def test_length_rules_name_int_fields(kind):
    ints = {f.name for f in schema.spec_fields(kind) if f.type == "int"}
    for f in schema.spec_fields(kind):
        assert f.head or f.name == kind + "." + f.name.rpartition(".")[2] or kind == "linear", f.name
        assert all(name in ints for name, _ in f.len), f.name
        assert (f.type in ("int", "real")) == (not f.len and f.add == 0), f.name


def _trees(**over) -> dict:
    """A one-leaf tree model of one group on one input, as the glue's spec."""
    i32, f64 = (lambda *v: np.array(v, np.int32)), (lambda *v: np.array(v, np.float64))
    f = {**head(1, _core.NCOLS, inputs([0])), "trees.nout": 1, "trees.ntrees": 1, "trees.nnodes": 1,
         "trees.cast_f32": 0, "trees.scale": 1.0, "trees.tree_ptr": i32(0, 1), "trees.root": i32(0),
         "trees.feature": i32(-1), "trees.left": i32(-1), "trees.right": i32(-1), "trees.threshold": f64(0),
         "trees.value": f64(2.0), "trees.init": f64(0)}
    return {**f, **over}


_CFG = {"cfg.n": 0, "cfg.nextra": 0, "cfg.nfeatures": _core.NCOLS, "cfg.group": np.zeros(0, np.int32),
        "cfg.extra": np.zeros(0)}


def _new(kind: str, fields: dict, subs: list[Spec] = ()) -> object:
    return _core.model_new({**Spec(kind, fields, list(subs)).to_dict(), **_CFG})


def test_parser_reads_every_field_by_its_table():
    cap = _new("trees", _trees())
    ms, _ = _core.model_predict(cap, np.zeros(_core.NCOLS), _core.NCOLS, np.zeros(1, np.int32))
    assert ms.tolist() == [2.0]


@pytest.mark.parametrize("name", [f.name for f in schema.spec_fields("trees") if f.type == "int"])
def test_parser_refuses_ints_past_their_range(name):
    hi = next(f.hi for f in schema.spec_fields("trees") if f.name == name)
    with pytest.raises(ValueError, match=f"'{name}' = {hi + 1} is outside"):
        _new("trees", _trees(**{name: hi + 1}))
    with pytest.raises(ValueError, match=f"'{name}'"):
        checks.check_spec(Spec("trees", _trees(**{name: hi + 1})), "spec")


def test_parser_refuses_a_missing_array_by_name():
    f = _trees()
    del f["trees.root"]
    with pytest.raises(ValueError, match="'trees.root'"):
        _new("trees", f)


def test_sub_models_only_of_the_kinds_their_field_allows():
    """A cascade's stages: trees or one class, as cascade_fields' mask says, in C and in Python."""
    assert schema.sub_kinds("cascade") == ("constant", "trees") and schema.sub_kinds("trees") == ()
    top = {**head(1, _core.NCOLS, inputs([])), "cascade.nlevels": 1, "cascade.node": np.zeros(1, np.int32),
           "cascade.cls": np.zeros(1, np.int32)}
    _new("cascade", top, [Spec("trees", _trees())])
    linear = Spec("linear", {**head(1, _core.NCOLS, inputs([])), "coef": np.zeros(0), "intercept": np.zeros(1)})
    with pytest.raises(ValueError, match="cannot hold a model of kind 1"):
        _new("cascade", top, [linear])
    with pytest.raises(ValueError, match=r"must be one of \('constant', 'trees'\)"):
        checks.check_spec(Spec("cascade", top, [linear]), "spec")
    with pytest.raises(ValueError, match="needs 1 to"):
        checks.check_spec(Spec("cascade", top, []), "spec")
