"""A short, seeded run of the model-file fuzzer (tests/fuzz/fuzz_modelfile.py, issue 45): a few hundred
mutated model files, each read by load_model as documented (a model that ranks, or a ValueError); and
the fuzzer's findings, replayed."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import importlib.util
import io
import json
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import pyspmv

HARNESS = Path(__file__).resolve().parent / "fuzz" / "fuzz_modelfile.py"


def _harness():
    spec = importlib.util.spec_from_file_location("fuzz_modelfile", HARNESS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_mutated_model_files_load_or_raise_value_error(tmp_path):
    log = io.StringIO()
    n, found = _harness().run(iterations=250, seed=45, findings=tmp_path, default_every=50, log=log)
    assert not found, log.getvalue()
    assert n == 250


def _default_edited(tmp_path, edit):
    """The shipped cpu default with its header.json edited by ``edit``."""
    src = Path(pyspmv.__file__).parent / "data" / "default_cpu.pyspmv"
    with zipfile.ZipFile(src) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    h = json.loads(bytes(np.lib.format.read_array(io.BytesIO(members["header.json.npy"]))).decode())
    edit(h)
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.frombuffer(json.dumps(h).encode(), np.uint8))
    members["header.json.npy"] = buf.getvalue()
    path = tmp_path / "edited.pyspmv"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


@pytest.mark.parametrize(("edit", "message"), [
    (lambda h: h["meta"]["convert_ms"].__setitem__("csr", [10**400, 0.0]),
     r"conversion-cost fit 'convert_ms' .* must give format 'csr' two finite numbers >= 0"),
    (lambda h: h["tables"]["float64"]["spec"]["scalars"].__setitem__("out_lo", -10**400),
     r"The field 'out_lo' of .* must be a finite float"),
])
def test_fuzz_finding_integers_past_float64_in_a_model_file_are_value_errors(tmp_path, edit, message):
    """The fuzzer's first finding: an integer spelt out past float64 in header.json (a conversion-cost fit,
    a real scalar) made load_model raise TypeError from np.isfinite."""
    with pytest.raises(ValueError, match=message):
        pyspmv.load_model(_default_edited(tmp_path, edit))


@pytest.mark.parametrize("threads", ["²", "9" * 5000])
def test_fuzz_finding_odd_thread_counts_in_a_model_meta_still_rank(tmp_path, threads):
    """A model whose meta['device_info'] holds an OMP_NUM_THREADS that str.isdigit() passes but int()
    refuses ('²', 5000 digits) loaded, then rank() raised ValueError: invalid literal for int()."""
    m = pyspmv.load_model(_default_edited(tmp_path, lambda h: h["meta"]["device_info"].__setitem__(
        "omp_num_threads", threads)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pyspmv.OtherMachineWarning)
        r = pyspmv.rank(pyspmv.generate("poisson2d", 8), model=m)
    assert len(r) == len(m.tables["float64"].config_ids)


def test_a_device_info_that_is_no_dict_ranks_as_unrecorded(tmp_path):
    """Found by the fuzzer after rankings came to name the machine a model was measured on (issue 51): a model
    file whose meta['device_info'] is a number loaded, then rank() raised AttributeError."""
    m = pyspmv.load_model(_default_edited(tmp_path, lambda h: h["meta"].__setitem__("device_info", 5)))
    r = pyspmv.rank(pyspmv.generate("poisson2d", 5), model=m)
    assert r.measured_on == "an unrecorded cpu device" and r.here
