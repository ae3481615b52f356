"""Corpora: lists of lazily built matrices (generated, a Matrix Market folder, SuiteSparse by name)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import csv
import functools
import os
import re
import tarfile
import urllib.request
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._atomic import write_atomically
from .._params import Interval, validate
from ..matrices import generators as gen
from ..matrices.matrix import Matrix
from ..matrices.mmio import load

#: Rows one full-GPU iteration covers with a warp per row on the H100 (Guo's strip).
_STRIP = gen.H100["sm_count"] * gen.H100["threads_per_sm"] // gen.H100["warp_size"]


@dataclass(frozen=True)
class CorpusEntry:
    """One matrix of a corpus, built only when ``build()`` is called.

    Attributes
    ----------
    name : str
        Unique, stable label (the ``matrix`` column of the dataset tables).
    group : str
        Its family.
    nnz : int
        Approximate stored entries (exact for most generated families), for ordering and filtering.
    build : callable
        Zero-argument; returns the :class:`pyspmv.Matrix`, named ``name`` and grouped ``group``.
    """

    name: str
    group: str
    nnz: int
    build: Callable[[], Matrix]


def _named(fn: Callable[..., Matrix], kwargs: dict[str, Any], name: str, group: str) -> Matrix:
    M = fn(**kwargs)
    M.name, M.group = name, group
    return M


def _entry(fn: Callable[..., Matrix], kwargs: dict[str, Any], name: str, group: str, nnz: float) -> CorpusEntry:
    return CorpusEntry(name, group, int(nnz), functools.partial(_named, fn, kwargs, name, group))


# -- one sizer per family: (target nnz, variant) -> entry ------------------------------------------
def _guo(t: float, v: int, seed: int) -> CorpusEntry:
    k = (4, 8, 16, 32, 64, 128, 256)[v % 7]
    mapping = "thread" if v % 2 and t >= 4 * _STRIP * 32 * 4 else "warp"
    strip = _STRIP * (32 if mapping == "thread" else 1)
    strips = max(1, round(t / (strip * k)))
    if strips == 1:
        k = max(1, round(t / strip))
    return _entry(gen.guo, {"strips": strips, "nnz_per_row": k, "mapping": mapping, "seed": seed},
                  f"guo_{mapping}_s{strips}_k{k}_r{seed}", "guo", strips * strip * k)


def _wang(dist: str) -> Callable[[float, int, int], CorpusEntry]:
    def sizer(t: float, v: int, seed: int) -> CorpusEntry:
        mean = (4, 8, 16, 32, 64, 128, 256)[v % 7]
        while mean > 4 and t / mean < 64 * mean:
            mean //= 2
        rel = (0.1, 0.3, 0.6)[v % 3] if dist == "normal" else (0.25, 0.5, 0.9)[v % 3]
        spread = round(mean * rel, 2)
        n = max(16, round(t / mean))
        return _entry(gen.row_lengths, {"nrows": n, "mean": mean, "spread": spread, "dist": dist, "seed": seed},
                      f"wang_{dist}_n{n}_m{mean:g}_s{spread:g}_r{seed}", f"wang_{dist}", n * mean)
    return sizer


def _stencil_nnz(dim: int, points: int, n: int) -> int:
    if points == 2 * dim + 1:
        return points * n ** dim - 2 * dim * n ** (dim - 1)
    return (3 * n - 2) ** dim


def _stencil(t: float, v: int, seed: int) -> CorpusEntry:
    dim, points = ((2, 5), (3, 7), (2, 9), (3, 27))[v % 4]
    n = max(3, round((t / points) ** (1 / dim)))
    return _entry(gen.stencil, {"dim": dim, "points": points, "n": n, "seed": seed},
                  f"stencil{dim}d{points}_n{n}_r{seed}", f"stencil{dim}d", _stencil_nnz(dim, points, n))


def _banded(t: float, v: int, seed: int) -> CorpusEntry:
    k = (3, 8, 20, 50)[v % 4]
    b = k * (1, 4, 40)[v % 3]
    n = max(4 * b + 8, round(t / (k + 1)))
    return _entry(gen.banded, {"n": n, "bandwidth": b, "nnz_per_row": k, "seed": seed},
                  f"banded_n{n}_b{b}_k{k}_r{seed}", "banded", n * (k + 1))


def _fem(t: float, v: int, seed: int) -> CorpusEntry:
    dim = 2 + v % 2
    b = (2, 3, 4, 6, 3)[v % 5]
    deg = 7 if dim == 2 else 9
    n = max(3, round((t / (deg * b * b)) ** (1 / dim)))
    return _entry(gen.fem_blocks, {"n": n, "block": b, "dim": dim, "seed": seed},
                  f"fem{dim}d_n{n}_b{b}_r{seed}", "fem_block", deg * b * b * n ** dim)


def _powerlaw(t: float, v: int, seed: int) -> CorpusEntry:
    mean = (4, 8, 16, 32, 6)[v % 5]
    alpha = (2.1, 2.5, 3.0)[v % 3]
    n = max(64, round(t / mean))
    return _entry(gen.powerlaw, {"n": n, "mean": mean, "alpha": alpha, "seed": seed},
                  f"powerlaw_n{n}_m{mean:g}_a{alpha:g}_r{seed}", "powerlaw", n * mean)


def _circuit(t: float, v: int, seed: int) -> CorpusEntry:
    short = (2.0, 4.0, 6.0)[v % 3]
    dense = (1, 4, 10, 2)[v % 4]
    n = max(64, round(t / (1 + short + dense / 2)))
    return _entry(gen.circuit, {"n": n, "short": short, "dense": dense, "seed": seed},
                  f"circuit_n{n}_s{short:g}_d{dense}_l{n // 4}_r{seed}", "circuit", n * (1 + short + dense / 2))


def _diag(t: float, v: int, seed: int) -> CorpusEntry:
    nd = (3, 5, 9, 17, 33)[v % 5]
    noise = (0.1, 0.5, 2.0)[v % 3]
    n = max(64, round(t / (nd + noise)))
    return _entry(gen.diagonal_heavy, {"n": n, "ndiags": nd, "noise": noise, "seed": seed},
                  f"diagheavy_n{n}_d{nd}_z{noise:g}_r{seed}", "diagonal_heavy", n * (nd + noise))


def _scaled_base(kind: str, seed: int) -> Matrix:
    """Small irregular bases for scaled-up generated matrices (real ones come from ``real=``)."""
    if kind == "circuit":
        return gen.circuit(3000, short=3.0, dense=3, seed=seed)
    if kind == "powerlaw":
        return gen.powerlaw(2000, 6, 2.3, seed=seed)
    return gen.fem_blocks(20, 3, seed=seed)


def _scaled_build(kind: str, factor: int, mode: str, density: float, seed: int) -> Matrix:
    return gen.scaled(_scaled_base(kind, seed), factor, mode=mode, density=density, seed=seed)


def _tiling(t: float, base_nnz: float) -> tuple[int, float, float]:
    """(factor, density, approximate nnz) of a scaled-up matrix near ``t`` entries: the block pattern
    keeps its diagonal plus about 4 more blocks per block row (at most 30 % of them)."""
    f = 2
    while True:
        d = min(0.3, 4.0 / f)
        nnz = base_nnz * (f + d * (f * f - f))
        if nnz >= t or f >= 1 << 16:
            return f, d, nnz
        f = max(f + 1, int(f * 1.02))


def _scaled(t: float, v: int, seed: int) -> CorpusEntry:
    kind = ("circuit", "powerlaw", "fem")[v % 3]
    mode = ("tile", "kron")[v % 2]
    base_nnz = {"circuit": 3000 * 6.5, "powerlaw": 2000 * 5.8, "fem": 400 * 7 * 9}[kind]
    f, d, nnz = _tiling(t, base_nnz)
    return _entry(_scaled_build, {"kind": kind, "factor": f, "mode": mode, "density": d, "seed": seed},
                  f"scaled_{kind}_x{f}{mode}_r{seed}", f"scaled_{kind}", nnz)


_FAMILIES = (_guo, _wang("normal"), _wang("uniform"), _stencil, _banded, _fem, _powerlaw, _circuit, _diag, _scaled)


def _real_scaled(path: Path, name: str, group: str, factor: int, density: float, seed: int,
                 mode: str = "tile") -> Matrix:
    M = gen.scaled(load(path), factor, mode=mode, density=density, seed=seed, name=name)
    M.group = f"scaled_{group}"
    return M


def _scaled_entry(e: CorpusEntry, t: float, mode: str, seed: int) -> CorpusEntry:
    """``e`` (a folder_corpus entry) scaled up to about ``t`` entries: ``<name>_x<factor><mode>_r<seed>``."""
    f, d, nnz = _tiling(t, max(e.nnz, 1))
    path = e.build.keywords["path"]  # type: ignore[attr-defined]
    return CorpusEntry(f"{e.name}_x{f}{mode}_r{seed}", f"scaled_{e.group}", int(nnz),
                       functools.partial(_real_scaled, path, e.name, e.group, f, d, seed, mode))


def scaled_corpus(folder: str | os.PathLike[str], min_nnz: float = 3e6, max_nnz: float = 1.6e7, per_kind: int = 4,
                  seed: int = 0) -> list[CorpusEntry]:
    """Scaled-up real matrices spread over a folder's kinds and over a range of sizes.

    Each matrix of ``folder`` (:func:`folder_corpus`) draws, from ``seed`` and its own name alone, a
    rank within its kind, a size target log-uniform in ``[min_nnz, max_nnz]`` and a mode, ``'tile'``
    or ``'kron'`` (:func:`pyspmv.matrices.generators.scaled`); of each kind the ``per_kind`` lowest ranks whose
    scaled size lies in the range are kept (a matrix too large to scale by 2 within it is passed over).
    No draw depends on the folder's other files, so a folder holding only the chosen matrices gives the
    same entries. Unlike ``standard_corpus(real=...)``, which tiles every matrix at a size set by its
    place in name order, this gives each kind matrices of every size and both modes.

    Returns
    -------
    list of CorpusEntry
        Interleaved over kinds (every kind's first, then every kind's second, ...), so that a
        collection cut short still covers every kind; names ``<matrix>_x<factor><mode>_r<seed>``,
        groups ``scaled_<kind>``.
    """
    if not 0 < min_nnz <= max_nnz:
        raise ValueError(f"The 'min_nnz' and 'max_nnz' parameters of scaled_corpus() must satisfy "
                         f"0 < min_nnz <= max_nnz. Got {min_nnz!r} and {max_nnz!r} instead.")
    validate("scaled_corpus()", {"per_kind": Interval("int", 1)}, locals())
    kinds: dict[str, list[tuple[float, CorpusEntry]]] = {}
    for e in folder_corpus(folder):
        rank, u, m = np.random.default_rng([seed, zlib.crc32(e.name.encode())]).random(3)
        s = _scaled_entry(e, float(np.exp(np.log(min_nnz) + u * np.log(max_nnz / min_nnz))),
                          ("tile", "kron")[int(m < 0.5)], seed)
        if min_nnz <= s.nnz <= max_nnz:
            kinds.setdefault(e.group, []).append((float(rank), s))
    picks = [[s for _, s in sorted(v, key=lambda p: (p[0], p[1].name))[:per_kind]] for _, v in sorted(kinds.items())]
    return [p[i] for i in range(per_kind) for p in picks if i < len(p)]


#: The real matrices shipped with the package (``pyspmv/data/real``: SuiteSparse Matrix Collection, CC BY 4.0;
#: its README names each source) and the group prefix of every matrix of :func:`real_corpus`.
REAL_FOLDER = Path(__file__).resolve().parents[1] / "data" / "real"
REAL_GROUP = "real"
#: How far a scaled copy's entries may pass the tiling's estimate of them (young1c tiled 3 times: 24,534 against
#: 19,627): copies are kept only where the estimate times this fits the size limit.
_TILING_ERROR = 1.5
_SCALED_NAME = re.compile(r"^(?P<base>.+)_x\d+(?:tile|kron)_r\d+$")


def base_matrix(name: str) -> str:
    """The real matrix a scaled copy (``<matrix>_x<factor><mode>_r<seed>``) was made from, else ``name``:
    what cross-validation groups by, so that a matrix and its copies are never on both sides of a fold."""
    m = _SCALED_NAME.match(name)
    return m.group("base") if m else name


def is_real(group: str) -> bool:
    """Whether a dataset group is one of :func:`real_corpus`'s (a shipped real matrix or a copy of one)."""
    return str(group).startswith(REAL_GROUP + ":")


def real_corpus(max_nnz: float = 1e6, seed: int = 0, copies: int = 2,
                folder: str | os.PathLike[str] | None = None) -> list[CorpusEntry]:
    """The real matrices shipped with pyspmv and scaled-up copies of them: real structure for
    :func:`pyspmv.calibrate` where the user gives no matrices of their own.

    Each matrix of ``folder`` (default :data:`REAL_FOLDER`, six SuiteSparse matrices of 4.1e3 to 9.3e5
    entries) of at most ``max_nnz`` entries, then up to ``copies`` scaled copies of each
    (:func:`pyspmv.matrices.generators.scaled`, tiled and Kronecker in turn) at sizes log-spread from 4 times
    its own up to ``max_nnz``, so that every kind of real structure comes in the sizes calibration measures.

    Returns
    -------
    list of CorpusEntry
        The originals smallest first, then the copies smallest first; groups ``real:<kind>`` and
        ``real:scaled_<kind>``, copies named ``<matrix>_x<factor><mode>_r<seed>`` (:func:`base_matrix`).
    """
    validate("real_corpus()", {"copies": Interval("int", 0)}, locals())
    base = folder_corpus(REAL_FOLDER if folder is None else folder)
    originals = [CorpusEntry(e.name, f"{REAL_GROUP}:{e.group}", e.nnz, e.build) for e in base if e.nnz <= max_nnz]
    scaled: dict[str, CorpusEntry] = {}
    for e in base:
        lo = 4.0 * max(e.nnz, 1)
        if copies == 0 or lo * _TILING_ERROR > max_nnz:
            continue
        for i, t in enumerate(np.geomspace(lo, max_nnz, copies + 1)[:copies]):
            s = _scaled_entry(e, float(t), ("tile", "kron")[i % 2], seed)
            if s.nnz * _TILING_ERROR <= max_nnz:        # the size is the tiling's estimate, not the count
                scaled.setdefault(s.name, CorpusEntry(s.name, f"{REAL_GROUP}:scaled_{e.group}", s.nnz, s.build))
    return originals + sorted(scaled.values(), key=lambda e: (e.nnz, e.name))


def standard_corpus(max_nnz: float = 1e8, seed: int = 0, *, min_nnz: float = 0,
                    real: str | os.PathLike[str] | None = None) -> list[CorpusEntry]:
    """The generated corpus of the shipped datasets, smallest first, built lazily.

    282 entries over every family of :mod:`pyspmv.matrices.generators`, log-spread in size: 238 from
    1e4 to 3e6 stored entries, 40 from 3e6 to 3e7, and 4 from 3e7 to 1e8 (the largest a 3-D 7-point
    stencil of 9.9e7). Names and matrices depend only on ``seed``, never on the size limits.

    Parameters
    ----------
    max_nnz, min_nnz : float
        Keep entries whose approximate ``nnz`` lies in ``[min_nnz, max_nnz]``.
    seed : int
    real : path, optional
        A Matrix Market folder with MANIFEST.csv (:func:`folder_corpus`): adds one scaled-up version
        (tiled, ``scaled(..., mode='tile')``) of each of its matrices, log-spread from 5e5 to 3e7.
    """
    if not max_nnz >= min_nnz:
        raise ValueError(f"The 'max_nnz' parameter of standard_corpus() must be >= min_nnz={min_nnz}. "
                         f"Got {max_nnz!r} instead.")
    targets = np.concatenate((np.geomspace(1e4, 3e6, 238, endpoint=False), np.geomspace(3e6, 3e7, 40, endpoint=False)))
    out = [_powerlaw(4e7, 1, seed), _fem(5.5e7, 1, seed), _wang("normal")(7e7, 4, seed), _stencil(9.8e7, 1, seed)]
    seen = {e.name for e in out}
    for i, t in enumerate(targets):
        fam, v = i % len(_FAMILIES), i // len(_FAMILIES)
        e = _FAMILIES[fam](t, v, seed)
        for k in range(1, 40):                  # small sizes can repeat a variant: the next one, a bit larger
            if e.name not in seen:
                break
            e = _FAMILIES[fam](t * 1.04 ** k, v + k, seed)
        seen.add(e.name)
        out.append(e)
    if real is not None:
        reals = folder_corpus(real)
        for t, e in zip(np.geomspace(5e5, 3e7, max(len(reals), 1)), sorted(reals, key=lambda e: e.name)):
            out.append(_scaled_entry(e, t, "tile", seed))
    names = [e.name for e in out]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise RuntimeError(f"standard_corpus(): duplicate names {sorted(dup)}")
    return sorted((e for e in out if min_nnz <= e.nnz <= max_nnz), key=lambda e: (e.nnz, e.name))


def _load_named(path: Path, name: str, group: str) -> Matrix:
    M = load(path)
    M.name, M.group = name, group
    return M


def folder_corpus(path: str | os.PathLike[str]) -> list[CorpusEntry]:
    """The matrices of a Matrix Market folder with a ``MANIFEST.csv``, smallest first.

    MANIFEST.csv has a header with at least ``name`` and ``kind``; ``kind`` becomes the group. Files are
    ``NAME.mtx`` or ``NAME.mtx.gz``. Sizes come from ``nnz_full`` or ``nnz_stored`` when present, else
    from the file size.

    Raises
    ------
    FileNotFoundError
        No such folder, no MANIFEST.csv, or a listed matrix without its file.
    ValueError
        A manifest without ``name`` and ``kind`` columns.
    """
    root = Path(path)
    manifest = root / "MANIFEST.csv"
    if not manifest.is_file():
        raise FileNotFoundError(f"The 'path' parameter of folder_corpus() must be a folder with MANIFEST.csv; "
                                f"{manifest} does not exist.")
    with open(manifest, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if rows and not {"name", "kind"} <= set(rows[0]):
        raise ValueError(f"{manifest} must have columns 'name' and 'kind'; it has {list(rows[0])}.")
    out = []
    for r in rows:
        name = r["name"]
        f = next((root / f"{name}{ext}" for ext in (".mtx", ".mtx.gz") if (root / f"{name}{ext}").is_file()), None)
        if f is None:
            raise FileNotFoundError(f"{manifest} lists {name!r} but neither {name}.mtx nor {name}.mtx.gz is in {root}.")
        nnz = r.get("nnz_full") or r.get("nnz_stored") or ""
        size = int(nnz) if nnz.isdigit() else f.stat().st_size // 8
        out.append(CorpusEntry(name, r["kind"], size, functools.partial(_load_named, path=f, name=name, group=r["kind"])))
    return sorted(out, key=lambda e: (e.nnz, e.name))


SUITESPARSE_URL = "https://sparse.tamu.edu/MM/{group}/{name}.tar.gz"


def suitesparse(name: str, group: str, cache_dir: str | os.PathLike[str] | None = None) -> Matrix:
    """A SuiteSparse collection matrix by name, downloaded once into ``cache_dir``.

    The cache (default ``~/.cache/pyspmv/suitesparse``) is consulted first: ``<cache>/<group>/<name>.mtx``
    (or ``.mtx.gz``) is read without any network access; otherwise
    ``https://sparse.tamu.edu/MM/<group>/<name>.tar.gz`` is downloaded and its ``<name>/<name>.mtx``
    extracted there.

    Raises
    ------
    OSError
        Download or extraction failed (offline, unknown name); the message has the URL.
    """
    for arg, v in (("name", name), ("group", group)):
        if not isinstance(v, str) or not v or "/" in v or v.startswith("."):
            raise ValueError(f"The '{arg}' parameter of suitesparse() must be a plain collection name. Got {v!r}.")
    cache = Path(cache_dir) if cache_dir is not None else Path.home() / ".cache" / "pyspmv" / "suitesparse"
    folder = cache / group
    for ext in (".mtx", ".mtx.gz"):
        if (folder / f"{name}{ext}").is_file():
            return _load_named(folder / f"{name}{ext}", name, group)
    folder.mkdir(parents=True, exist_ok=True)
    url = SUITESPARSE_URL.format(group=group, name=name)
    tmp = folder / f".{name}.tar.gz.part"
    try:
        with urllib.request.urlopen(url, timeout=60) as resp, open(tmp, "wb") as fh:
            while chunk := resp.read(1 << 20):
                fh.write(chunk)
        with tarfile.open(tmp, "r:gz") as tar:
            member = tar.getmember(f"{name}/{name}.mtx")
            src = tar.extractfile(member)
            if src is None:
                raise OSError(f"{url}: {name}/{name}.mtx is not a regular file")

            def copy(part: str) -> None:
                with open(part, "wb") as out:
                    while chunk := src.read(1 << 20):
                        out.write(chunk)
            with src:
                write_atomically(folder / f"{name}.mtx", copy, ".mtx")
    except (OSError, KeyError, tarfile.TarError) as exc:
        raise OSError(f"suitesparse(): could not fetch {url} into {folder}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return _load_named(folder / f"{name}.mtx", name, group)
