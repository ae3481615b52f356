"""The pyspmv command."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import json

import scipy.io
import scipy.sparse as sp

from pyspmv.cli import main


def test_features_of_a_file(tmp_path, capsys):
    scipy.io.mmwrite(tmp_path / "m.mtx", sp.random(20, 20, density=0.2, random_state=0))
    assert main(["features", str(tmp_path / "m.mtx"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["matrix"] == "m" and out["nrows"] == 20


def test_features_of_a_generated_matrix(capsys):
    assert main(["features", "--generate", "poisson2d:10"]) == 0
    assert "nnz_max" in capsys.readouterr().out


def test_bench_writes_csv(tmp_path, capsys):
    out = tmp_path / "b.csv"
    assert main(["bench", "--generate", "banded:200", "--config", "cpu/csr/rows", "--config", "cpu/ell",
                 "--repeats", "5", "--quiet", "--out", str(out)]) == 0
    assert "cpu/csr/rows" in capsys.readouterr().out
    assert out.read_text().count("\n") == 3


def test_errors_are_one_line_and_exit_2(capsys):
    assert main(["features", "/no/such.mtx"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["features", "--generate", "poisson2d:x"]) == 2
    assert main(["bench", "--generate", "poisson2d:5", "--config", "cpu/zzz"]) == 2
    assert "Unknown configuration id" in capsys.readouterr().err
