"""Matrix Market reading (pyspmv.load over csrc/mmread.c): every byte and token checked, or refused
with the line; agreement with scipy's reader on well-formed files (issue 33, items 1, 3-5, 11)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import gzip
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import pyspmv
from pyspmv.matrices import mmio

# Subprocesses start in tests/, not the checkout's root, where the source tree's pyspmv (without its
# compiled modules) would come first on sys.path and shadow the installed one.
HERE = Path(__file__).resolve().parent

SHARED = Path(__file__).resolve().parents[2] / "shared" / "matrices"
HEAD = "%%MatrixMarket matrix coordinate real general\n"


def _write(tmp_path: Path, data: str | bytes, name: str = "m.mtx") -> Path:
    p = tmp_path / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


def test_nul_byte_after_a_value_is_refused_in_a_subprocess(tmp_path):
    """The 58-byte file that killed the process (scipy's reader dereferenced NULL): refused, and the
    interpreter lives; the same through the command line."""
    p = _write(tmp_path, b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\0")
    code = ("import pyspmv, sys\ntry:\n    pyspmv.load(sys.argv[1])\nexcept ValueError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=120, cwd=HERE,
                       check=False)
    assert r.returncode == 0, r.stderr
    assert "line 3 holds the byte 0x00" in r.stdout
    r = subprocess.run([sys.executable, "-m", "pyspmv", "features", str(p)], capture_output=True, text=True, cwd=HERE,
                       check=False,
                       timeout=120)
    assert r.returncode != 0 and r.returncode > 0 and "line 3 holds the byte 0x00" in r.stderr


@pytest.mark.parametrize(("body", "message"), [
    ("1 1 1,5\n", "line 3: the value '1,5' is not a real number"),
    ("1 1 0x1p3\n", "line 3: the value '0x1p3' is not a real number"),
    ("1 1 1 4\n", "line 3 holds more than an entry: '4' follows it"),
    ("1 1\n", "line 3 holds no value"),
    ("1\n", "line 3 ends after its row index"),
    ("1.0 1 1\n", "line 3: the row index '1.0' must be an integer"),
    ("1 3 1\n", r"line 3: the column index 3 is outside \[1, 2\]"),
    ("% c\n\n1 1 1e400\n", "line 5: the value '1e400' is past the float64 limit"),
    ("1 1 1\x07\n", "line 3 holds the byte 0x07"),
    ("1 1 1\xe9\n", "line 3 holds the byte 0xc3"),
    ("1 1 1\n2 2 2\n", "line 4 holds entry 2, past the 1 the size line declares"),
    ("", "the file ends after 0 of the 1 entries"),
])
def test_value_tokens_are_read_whole_or_refused_with_the_line(tmp_path, body, message):
    with pytest.raises(ValueError, match=message):
        pyspmv.load(_write(tmp_path, HEAD + "2 2 1\n" + body))


def test_long_value_tokens_in_float64_range_are_read(tmp_path):
    """Issue 45, 9a: 1e308 spelt out (309 digits) was refused as 'not a real number' (tokens were cut
    at 128 characters); any finite double written out in full is read as strtod reads it, and a
    token past the limit says the limit and to use an exponent."""
    full = "1" + "0" * 308
    tiny = "-0." + "0" * 323 + "4940656458412465441765687928682213723651"  # the smallest subnormal
    A = pyspmv.load(_write(tmp_path, HEAD + f"2 2 3\n1 1 {full}\n2 2 {tiny}\n2 1 {full}.{'0' * 700}\n"))
    assert A.to_scipy().toarray().tolist() == [[1e308, 0.0], [1e308, -5e-324]]
    head = "%%MatrixMarket matrix coordinate integer general\n"
    assert pyspmv.load(_write(tmp_path, head + f"1 1 1\n1 1 {full}\n")).data[0] == 1e308
    with pytest.raises(ValueError, match=r"line 3: the value '1000000000000000\.\.\.' has 1200 characters, "
                                         r"past the limit of 1100 .*use an exponent"):
        pyspmv.load(_write(tmp_path, HEAD + "1 1 1\n1 1 1" + "0" * 1199 + "\n"))
    with pytest.raises(ValueError, match=r"line 3: the value '10{23}\.\.\.' is past the float64 limit "
                                         r"1\.8e\+308 and would become inf"):
        pyspmv.load(_write(tmp_path, HEAD + "1 1 1\n1 1 1" + "0" * 309 + "\n"))


def test_byte_order_marks_utf16_and_other_compressions_are_named(tmp_path):
    """Issue 45, 9b: a UTF-8 byte-order mark, UTF-16 text and an .xz file gave "'ascii' codec can't
    decode byte ...". The mark is skipped; the others are refused saying what the file is."""
    text = HEAD + "2 2 1\n2 1 3.5\n"
    A = pyspmv.load(_write(tmp_path, b"\xef\xbb\xbf" + text.encode()))
    assert A.to_scipy().toarray().tolist() == [[0.0, 0.0], [3.5, 0.0]]
    for enc in ("utf-16", "utf-16-le", "utf-16-be"):
        with pytest.raises(ValueError, match="is UTF-16 text; Matrix Market files are ASCII. Convert it"):
            pyspmv.load(_write(tmp_path, text.encode(enc)))
    with gzip.open(tmp_path / "u16.mtx.gz", "wb") as f:
        f.write(text.encode("utf-16"))
    with pytest.raises(ValueError, match="is UTF-16 text"):
        pyspmv.load(tmp_path / "u16.mtx.gz")
    lzma = pytest.importorskip("lzma")
    with pytest.raises(ValueError, match=r"'[^']*m\.mtx\.xz' is xz-compressed; pyspmv reads Matrix Market files "
                                         r"plain or gzip- or bzip2-compressed \(\.mtx, \.mtx\.gz, \.mtx\.bz2\)\. "
                                         r"Extract the \.mtx first \(xz -d\)"):
        pyspmv.load(_write(tmp_path, lzma.compress(text.encode()), "m.mtx.xz"))
    with pytest.raises(ValueError, match=r"is a zip archive.*\(unzip\)"):
        pyspmv.load(_write(tmp_path, b"PK\x03\x04" + bytes(40), "m.zip"))
    tar = tmp_path / "m.tar.gz"
    with tarfile.open(tar, "w:gz") as t:
        t.add(_write(tmp_path, text), arcname="m/m.mtx")
    with pytest.raises(ValueError, match=r"it is a tar archive .*extract the \.mtx from it first"):
        pyspmv.load(tar)
    with pytest.raises(ValueError, match="its first line holds the byte 0xe9 at position 1; Matrix Market files are "
                                         "ASCII"):
        pyspmv.load(_write(tmp_path, b"%\xe9" + text.encode()))


def test_integer_file_holds_integers_and_sums_in_float64(tmp_path):
    head = "%%MatrixMarket matrix coordinate integer general\n"
    with pytest.raises(ValueError, match="line 3: the value '7e3' is not an integer"):
        pyspmv.load(_write(tmp_path, head + "2 2 1\n1 1 7e3\n"))
    A = pyspmv.load(_write(tmp_path, head + "2 2 2\n1 1 9223372036854775807\n1 1 1\n"))
    assert A.data[0] == pytest.approx(9.223372036854775808e18, rel=1e-15)  # was -9.2e18, wrapped in int64


def test_fortran_d_exponents_are_read_on_purpose(tmp_path):
    A = pyspmv.load(_write(tmp_path, HEAD + "2 2 3\n1 1 1D3\n2 2 2.5d-1\n2 1 -1.5E+2\n"))
    np.testing.assert_array_equal(A.to_scipy().toarray(), [[1000.0, 0.0], [-150.0, 0.25]])


def test_symmetric_file_storing_both_triangles_is_refused(tmp_path):
    text = "%%MatrixMarket matrix coordinate real symmetric\n2 2 3\n1 1 1\n2 1 2\n1 2 2\n"
    with pytest.raises(ValueError, match=r"stores entries on both sides of the diagonal, \(2, 1\) below and "
                                         r"\(1, 2\) above"):
        pyspmv.load(_write(tmp_path, text))
    for sym in ("symmetric", "skew-symmetric"):  # one triangle, lower or upper, is expanded
        for entry in ("2 1 2", "1 2 2"):
            A = pyspmv.load(_write(tmp_path, f"%%MatrixMarket matrix coordinate real {sym}\n2 2 1\n{entry}\n"))
            assert A.nnz == 2 and sorted(A.data) == ([-2.0, 2.0] if sym == "skew-symmetric" else [2.0, 2.0])


def test_directory_and_fifo_are_named_as_such(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory"):
        pyspmv.load(tmp_path)
    fifo = tmp_path / "pipe.mtx"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="is not a regular file"):  # opening it would block
        pyspmv.load(fifo)


def test_endless_compressed_comments_are_refused_quickly(tmp_path):
    """A 389 KB .mtx.gz of 2e8 comment lines took 98 s and 0.87 GB to load a 2x2 matrix."""
    p = tmp_path / "bomb.mtx.gz"
    with gzip.open(p, "wb", compresslevel=9) as f:
        f.write(HEAD.encode())
        block = b"%\n" * 1_000_000
        for _ in range(20):
            f.write(block)
        f.write(b"2 2 1\n1 1 1\n")
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=f"no size line within its first {mmio.MAX_HEADER_LINES} lines"):
        pyspmv.load(p)
    assert time.perf_counter() - t0 < 10  # a bound against minutes, not a timing


def test_body_past_its_cap_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(mmio, "max_body_bytes", lambda entries: 64)
    with pytest.raises(ValueError, match="its body runs past 64 bytes"):
        pyspmv.load(_write(tmp_path, HEAD + "2 2 1\n" + "%" * 100 + "\n1 1 1\n"))


def test_pattern_line_may_carry_one_number(tmp_path):
    """SuiteSparse's Pajek graphs (Ragusa16) are pattern files whose lines list a weight: checked, dropped."""
    head = "%%MatrixMarket matrix coordinate pattern general\n"
    A = pyspmv.load(_write(tmp_path, head + "2 2 2\n1 1 5\n2 1\n"))
    np.testing.assert_array_equal(A.data, [1.0, 1.0])
    with pytest.raises(ValueError, match="line 3: the value '5,0' is not a real number"):
        pyspmv.load(_write(tmp_path, head + "2 2 1\n1 1 5,0\n"))
    with pytest.raises(ValueError, match="line 3 holds more than an entry"):
        pyspmv.load(_write(tmp_path, head + "2 2 1\n1 1 5 6\n"))


@pytest.mark.parametrize("sym", ["general", "symmetric", "skew-symmetric"])
def test_array_files(tmp_path, sym):
    n = 4
    rng = np.random.default_rng(1)
    D = rng.integers(-3, 4, (n, n)).astype(float)
    D = D if sym == "general" else D + D.T if sym == "symmetric" else D - D.T
    scipy.io.mmwrite(tmp_path / "d.mtx", D, symmetry=sym)
    A = pyspmv.load(tmp_path / "d.mtx")
    np.testing.assert_array_equal(A.to_scipy().toarray(), D)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(0, 30), st.sampled_from(["real", "integer", "pattern"]),
       st.sampled_from(["general", "symmetric", "skew-symmetric"]), st.integers(0, 2**31))
def test_agrees_with_scipy_on_what_scipy_writes(tmp_path_factory, m, n, nnz, field, sym, seed):
    """Random COO matrices (duplicates and explicit zeros included) written by scipy.io.mmwrite read
    back as scipy reads them."""
    if sym != "general":
        n = m
    rng = np.random.default_rng(seed)
    r, c = rng.integers(0, m, nnz), rng.integers(0, n, nnz)
    if sym != "general":  # one triangle, as the format stores
        r, c = np.maximum(r, c), np.minimum(r, c)
        if sym == "skew-symmetric":
            keep = r != c
            r, c = r[keep], c[keep]
    v = rng.integers(-5, 6, r.size).astype(float) if field != "real" else rng.standard_normal(r.size)
    d = tmp_path_factory.mktemp("mm")
    body = "".join(f"{i + 1} {j + 1}" + ("" if field == "pattern" else f" {int(x) if field == 'integer' else repr(float(x))}")
                   + "\n" for i, j, x in zip(r, c, v, strict=True))
    p = d / "m.mtx"
    p.write_text(f"%%MatrixMarket matrix coordinate {field} {sym}\n% made by the test\n{m} {n} {r.size}\n{body}")
    if r.size == 0:
        return
    mine = pyspmv.load(p)
    ref = pyspmv.Matrix(scipy.io.mmread(p, spmatrix=False))
    assert mine.shape == ref.shape
    np.testing.assert_array_equal(mine.indptr, ref.indptr)
    np.testing.assert_array_equal(mine.indices, ref.indices)
    np.testing.assert_allclose(mine.data, ref.data, rtol=1e-15, atol=0)


@pytest.mark.shared
def test_shared_matrices_read_as_scipy_reads_them():
    files = sorted(SHARED.glob("*.mtx*")) if SHARED.is_dir() else []
    if not files:
        pytest.skip(f"{SHARED} is absent")
    for f in files:
        mine = pyspmv.load(f)
        ref = pyspmv.Matrix(scipy.io.mmread(f, spmatrix=False))
        assert mine.shape == ref.shape, f.name
        assert np.array_equal(mine.indptr, ref.indptr) and np.array_equal(mine.indices, ref.indices), f.name
        np.testing.assert_allclose(mine.data, ref.data, rtol=1e-15, atol=0, err_msg=f.name)


def test_duplicates_are_summed_in_float64_on_every_path():
    """int8 100 + 100 gave -56.0 through COO and DOK; float32 CSR duplicates 3e38 + 3e38 became inf
    silently while the same data as COO was refused."""
    row, col = np.array([0, 0]), np.array([0, 0])
    v8 = np.array([100, 100], dtype=np.int8)
    assert pyspmv.Matrix(sp.coo_array((v8, (row, col)), shape=(2, 2))).data[0] == 200.0
    assert pyspmv.Matrix(sp.csr_array((v8, [0, 0], [0, 2, 2]), shape=(2, 2))).data[0] == 200.0
    d = sp.dok_array((2, 2), dtype=np.int8)
    d[0, 0] = 100
    d[1, 1] = 100
    assert pyspmv.Matrix(d).data.tolist() == [100.0, 100.0]
    big = np.array([3e38, 3e38], dtype=np.float32)
    for S in (sp.csr_array((big, [0, 0], [0, 2, 2]), shape=(2, 2)), sp.coo_array((big, (row, col)), shape=(2, 2))):
        with pytest.raises(ValueError, match="past the float32 limit"):
            pyspmv.Matrix(S)
        assert pyspmv.Matrix(S, dtype="float64").data[0] == pytest.approx(6e38, rel=1e-7)


def test_duplicates_whose_sum_overflows_float64_are_refused_on_every_path(tmp_path):
    """Issue 45, 9c: duplicates 1e308 + 1e308 became inf silently, while a single 1e400 is refused; now
    refused alike, naming the entry, from a file and from scipy input of every format that holds
    duplicates. Duplicates that are inf themselves, or that cancel, are summed as before."""
    msg = (r"2 duplicate entries at row 1, column 0 \(0-based\), each finite, whose float64 sum overflows "
           r"to -inf \(past the float64 limit 1\.8e\+308\)")
    with pytest.raises(ValueError, match=r"pyspmv.load\(\): '.*m\.mtx': The matrix holds " + msg):
        pyspmv.load(_write(tmp_path, HEAD + "2 2 3\n1 1 1\n2 1 -1e308\n2 1 -1e308\n"))
    row, col = np.array([0, 1, 1]), np.array([0, 0, 0])
    v = np.array([1.0, -1e308, -1e308])
    for S in (sp.coo_array((v, (row, col)), shape=(2, 2)), sp.csr_array((v, [0, 0, 0], [0, 1, 3]), shape=(2, 2)),
              sp.csc_array((v[::-1], [1, 1, 0], [0, 3, 3]), shape=(2, 2)), sp.coo_matrix((v, (row, col)), shape=(2, 2))):
        for dtype in ("float64", "float32"):
            with pytest.raises(ValueError, match=msg):
                pyspmv.Matrix(S, dtype=dtype)
    for w, want in (([1.0, np.inf, -5.0], np.inf), ([1.0, 1e308, -1e308], 0.0), ([1.0, 1e308, 7e307], 1e308 + 7e307)):
        A = pyspmv.Matrix(sp.coo_array((np.array(w), (row, col)), shape=(2, 2)))
        assert A.data.tolist() == [1.0, want]
    A = pyspmv.load(_write(tmp_path, HEAD + "2 2 3\n1 1 1\n2 1 inf\n2 1 1e308\n"))
    assert A.data.tolist() == [1.0, np.inf]


def test_bsr_shape_not_a_multiple_of_its_block_is_refused_in_a_subprocess():
    """scipy accepts it and its C++ conversion wrote past its arrays (SIGSEGV or double free)."""
    code = ("import numpy as np, scipy.sparse as sp, pyspmv\n"
            "try:\n"
            "    pyspmv.Matrix(sp.bsr_array((np.ones((2, 2, 2)), [0, 1], [0, 1, 2]), shape=(5, 5)))\n"
            "except ValueError as e:\n"
            "    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=HERE, check=False)
    assert r.returncode == 0, r.stderr
    assert "bsr shape 5x5 is not a multiple of its block size 2x2" in r.stdout


def test_format_parameter_past_int32_is_a_value_error():
    """convert(c=2**40) raised a bare OverflowError from the glue."""
    A = pyspmv.generate("poisson2d", 5)
    with pytest.raises(ValueError, match=r"'c' parameter of convert\(\) must be an int32 .* Got 1099511627776"):
        pyspmv.convert(A, "sell", c=2**40)


def test_collection_with_a_nul_file_finishes_and_resumes(tmp_path):
    """A collection holding the NUL-byte file died at it on every resume, so it never finished."""
    good = tmp_path / "good.mtx"
    scipy.io.mmwrite(good, sp.random(20, 20, density=0.2, random_state=1, format="coo"))
    bad = _write(tmp_path, b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\0", "bad.mtx")
    out = tmp_path / "ds"
    for _ in range(2):  # the run, then a resume
        pyspmv.collect([good, bad], out=out, dtypes=("float64",), configs=["cpu/csr/rows"], repeats=3,
                       warmup=1, budget_s=0.01, progress=False)
    import pandas as pd
    failures = pd.read_csv(out / "failures.csv.gz")
    assert "bad" in set(failures["matrix"]) and "line 3 holds the byte 0x00" in " ".join(failures.astype(str).values.ravel())
    assert set(pd.read_csv(out / "timings.csv.gz")["matrix"]) == {"good"}


def test_large_body_read_in_pieces_gives_the_serial_result_and_errors(tmp_path):
    """Bodies from 1 MiB are parsed by OpenMP threads side by side (csrc/mmread.c); the entries, and the
    first error with its line, are those of the serial read (OMP_NUM_THREADS=1 in a subprocess)."""
    rng = np.random.default_rng(3)
    n, m = 60_000, 5_000
    r, c, v = rng.integers(1, m + 1, n), rng.integers(1, m + 1, n), rng.standard_normal(n)
    lines = [f"{i} {j} {float(x)!r}" for i, j, x in zip(r, c, v, strict=True)]
    lines.insert(30_000, "% a comment in the middle")
    good = _write(tmp_path, HEAD + f"{m} {m} {n}\n" + "\n".join(lines) + "\n", "good.mtx")
    assert good.stat().st_size > 1 << 20
    bad_lines = list(lines)
    bad_lines[45_000] = "1 1 1,5"  # line 3 + 45000: header 2 lines, then the body from line 3
    bad = _write(tmp_path, HEAD + f"{m} {m} {n}\n" + "\n".join(bad_lines) + "\n", "bad.mtx")
    code = ("import sys, json, pyspmv\nA = pyspmv.load(sys.argv[1])\n"
            "print(json.dumps([A.indptr.tolist()[-1], float(A.data.sum()), int(A.indices.sum())]))\n"
            "try:\n    pyspmv.load(sys.argv[2])\nexcept ValueError as e:\n    print(json.dumps(str(e)))\n")
    outs = []
    for threads in ("1", "2", "3"):
        env = {**os.environ, "OMP_NUM_THREADS": threads}
        r_ = subprocess.run([sys.executable, "-c", code, str(good), str(bad)], capture_output=True, text=True,
                            timeout=300, env=env, cwd=HERE, check=True)
        outs.append(r_.stdout)
    assert outs[0] == outs[1] == outs[2]
    assert "line 45003: the value '1,5' is not a real number" in outs[0]
    A = pyspmv.load(good)
    ref = pyspmv.Matrix(sp.coo_array((v, (r - 1, c - 1)), shape=(m, m)))
    np.testing.assert_array_equal(A.indices, ref.indices)
    np.testing.assert_allclose(A.data, ref.data, rtol=1e-15)
