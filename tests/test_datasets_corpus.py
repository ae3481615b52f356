"""Corpora: the standard generated corpus, Matrix Market folders, the SuiteSparse cache (offline)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import collections
import gzip
import io
import re
import shutil
import tarfile

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from pyspmv.datasets import corpus, folder_corpus, scaled_corpus, standard_corpus, suitesparse


@pytest.fixture(scope="module")
def std():
    return standard_corpus()


def test_standard_corpus_size_spread_and_order(std):
    assert len(std) >= 280
    names = [e.name for e in std]
    assert len(set(names)) == len(names)
    nnz = np.array([e.nnz for e in std])
    assert np.all(np.diff(nnz) >= 0)
    assert 5e3 <= nnz[0] <= 2e4 and 5e7 <= nnz[-1] <= 1e8
    assert 220 <= (nnz < 3e6).sum() <= 245
    assert 35 <= ((nnz >= 3e6) & (nnz < 3e7)).sum() <= 45
    assert 3 <= (nnz >= 3e7).sum() <= 4
    assert any(e.name.startswith("stencil3d7") and e.nnz > 9e7 for e in std)


def test_standard_corpus_mixes_every_family(std):
    groups = collections.Counter(e.group.split("_")[0] for e in std)
    for fam in ("guo", "wang", "stencil2d", "stencil3d", "banded", "fem", "powerlaw", "circuit", "diagonal", "scaled"):
        assert groups[fam] >= 10, (fam, groups)
    # every family spans small and large sizes
    for fam in ("guo", "powerlaw", "circuit", "fem"):
        sizes = [e.nnz for e in std if e.group.startswith(fam)]
        assert min(sizes) < 1e5 and max(sizes) > 3e6


def test_standard_corpus_limits_and_seed(std):
    small = standard_corpus(max_nnz=1e5, min_nnz=2e4)
    assert small and all(2e4 <= e.nnz <= 1e5 for e in small)
    assert {e.name for e in small} <= {e.name for e in std}      # names do not depend on the limits
    other = standard_corpus(max_nnz=1e5, seed=1)
    assert all(e.name.endswith("_r1") for e in other)
    with pytest.raises(ValueError, match="max_nnz"):
        standard_corpus(max_nnz=10, min_nnz=100)


def test_smallest_entries_build_as_described(std):
    for e in std[:6]:
        A = e.build()
        assert A.name == e.name and A.group == e.group
        assert 0.7 * e.nnz <= A.nnz <= 1.3 * e.nnz
        assert np.all(A.data != 0)
    assert std[0].build().nnz == std[0].build().nnz


def write_folder(tmp_path):
    rng = np.random.default_rng(0)
    scipy.io.mmwrite(tmp_path / "a.mtx", sp.random(30, 30, density=0.2, random_state=rng))
    buf = io.BytesIO()
    scipy.io.mmwrite(buf, sp.random(50, 40, density=0.1, random_state=rng))
    (tmp_path / "b.mtx.gz").write_bytes(gzip.compress(buf.getvalue()))
    (tmp_path / "MANIFEST.csv").write_text("name,kind,nnz_full\nb,lp,200\na,graph,180\n")
    return tmp_path


def test_folder_corpus(tmp_path):
    es = folder_corpus(write_folder(tmp_path))
    assert [(e.name, e.group, e.nnz) for e in es] == [("a", "graph", 180), ("b", "lp", 200)]
    B = es[1].build()
    assert B.shape == (50, 40) and B.name == "b" and B.group == "lp"


def test_standard_corpus_scales_real_matrices(tmp_path):
    es = standard_corpus(max_nnz=1e9, real=write_folder(tmp_path))
    real = [e for e in es if e.group.startswith("scaled_") and e.name[0] in "ab"]
    assert {e.group for e in real} == {"scaled_graph", "scaled_lp"}
    small = min(real, key=lambda e: e.nnz)
    A = small.build()
    assert A.name == small.name and 0.5 * small.nnz < A.nnz < 2 * small.nnz


def write_kinds(folder, kinds):
    """A MANIFEST folder with ``n`` random 40 x 30 matrices per kind, named ``<kind><i>``."""
    folder.mkdir(exist_ok=True)
    rng = np.random.default_rng(1)
    lines = ["name,kind,nnz_full"]
    for kind, n in kinds.items():
        for i in range(n):
            A = sp.random(40, 30, density=0.1, random_state=rng)
            scipy.io.mmwrite(folder / f"{kind}{i}.mtx", A)
            lines.append(f"{kind}{i},{kind},{A.nnz}")
    (folder / "MANIFEST.csv").write_text("\n".join(lines) + "\n")
    return folder


def test_scaled_corpus_spreads_kinds_sizes_and_modes(tmp_path):
    src = write_kinds(tmp_path / "src", {"lp": 9, "graph": 2})
    es = scaled_corpus(src, 2e3, 2e4, per_kind=3)
    assert [e.group for e in es] == ["scaled_graph", "scaled_lp"] * 2 + ["scaled_lp"]  # interleaved over kinds
    parsed = [re.fullmatch(r"(\w+?)_x(\d+)(tile|kron)_r0", e.name) for e in es]
    assert all(parsed) and len({e.name for e in es}) == 5
    assert all(2e3 <= e.nnz <= 2e4 for e in es)
    many = scaled_corpus(src, 2e3, 2e4, per_kind=9)
    assert {re.fullmatch(r".*_x\d+(tile|kron)_r0", e.name).group(1) for e in many} == {"tile", "kron"}
    assert len({int(re.search(r"_x(\d+)", e.name).group(1)) for e in many}) >= 5  # sizes spread, not one target
    for e, m in zip(es[:2], parsed[:2]):
        A, f = e.build(), int(m.group(2))
        assert A.shape == (40 * f, 30 * f) and A.name == e.name and A.group == e.group
        assert 0.5 * e.nnz < A.nnz < 2 * e.nnz
    # a folder holding only the chosen matrices gives the same entries (what travels to a GPU machine)
    sub = tmp_path / "sub"
    sub.mkdir()
    keep = {m.group(1) for m in parsed}
    (sub / "MANIFEST.csv").write_text("".join(line for line in (src / "MANIFEST.csv").read_text().splitlines(True)
                                              if line.split(",")[0] in keep | {"name"}))
    for n in keep:
        shutil.copy(src / f"{n}.mtx", sub)
    assert [e.name for e in scaled_corpus(sub, 2e3, 2e4, per_kind=3)] == [e.name for e in es]
    assert [e.name for e in scaled_corpus(src, 2e3, 2e4, per_kind=3, seed=1)] != [e.name for e in es]
    assert scaled_corpus(src, 1e9, 2e9) == []        # nothing scales into the range: nothing, not an error


@pytest.mark.parametrize(("kwargs", "match"), [({"min_nnz": 5e6, "max_nnz": 1e6}, "min_nnz"),
                                                ({"min_nnz": 0}, "min_nnz"), ({"per_kind": 0}, "per_kind"),
                                                ({"per_kind": True}, "per_kind"), ({"per_kind": 2.5}, "per_kind")])
def test_scaled_corpus_errors(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        scaled_corpus(write_kinds(tmp_path / "src", {"lp": 1}), **kwargs)


def test_folder_corpus_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="MANIFEST.csv"):
        folder_corpus(tmp_path)
    (tmp_path / "MANIFEST.csv").write_text("name,kind\nmissing,graph\n")
    with pytest.raises(FileNotFoundError, match="missing"):
        folder_corpus(tmp_path)
    (tmp_path / "MANIFEST.csv").write_text("file,type\nx,y\n")
    with pytest.raises(ValueError, match="'name' and 'kind'"):
        folder_corpus(tmp_path)


def test_suitesparse_reads_the_cache_without_network(tmp_path, monkeypatch):
    def no_network(*a, **k):
        raise AssertionError("the network was used")

    monkeypatch.setattr(corpus.urllib.request, "urlopen", no_network)
    (tmp_path / "HB").mkdir()
    scipy.io.mmwrite(tmp_path / "HB" / "tiny.mtx", sp.random(8, 8, density=0.5, random_state=1))
    A = suitesparse("tiny", "HB", cache_dir=tmp_path)
    assert A.shape == (8, 8) and A.name == "tiny" and A.group == "HB"


def test_suitesparse_extracts_a_downloaded_archive(tmp_path, monkeypatch):
    buf = io.BytesIO()
    scipy.io.mmwrite(buf, sp.random(9, 7, density=0.5, random_state=2))
    tar_bytes = io.BytesIO()
    with tarfile.open(fileobj=tar_bytes, mode="w:gz") as tar:
        info = tarfile.TarInfo("m1/m1.mtx")
        info.size = len(buf.getvalue())
        tar.addfile(info, io.BytesIO(buf.getvalue()))
    urls = []

    def fake_urlopen(url, timeout):
        urls.append(url)
        return io.BytesIO(tar_bytes.getvalue())

    monkeypatch.setattr(corpus.urllib.request, "urlopen", fake_urlopen)
    A = suitesparse("m1", "Grp", cache_dir=tmp_path)
    assert A.shape == (9, 7) and urls == ["https://sparse.tamu.edu/MM/Grp/m1.tar.gz"]
    assert (tmp_path / "Grp" / "m1.mtx").is_file() and not list((tmp_path / "Grp").glob(".*"))
    suitesparse("m1", "Grp", cache_dir=tmp_path)                   # second call: from the cache
    assert len(urls) == 1


def test_suitesparse_offline_error_names_the_url(tmp_path, monkeypatch):
    def offline(url, timeout):
        raise OSError("no route")

    monkeypatch.setattr(corpus.urllib.request, "urlopen", offline)
    with pytest.raises(OSError, match="sparse.tamu.edu/MM/G/x.tar.gz"):
        suitesparse("x", "G", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="'name'"):
        suitesparse("../x", "G", cache_dir=tmp_path)
