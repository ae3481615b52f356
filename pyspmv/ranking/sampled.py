"""A matrix that lives on the GPU, ranked from a sample of its rows read to the host: never the whole matrix.

``rank(estimate=True)`` of a host matrix reads its ``indptr`` at every :data:`pyspmv._core.SAMPLE_BLOCK`-th row and
the rows of a few blocks of that many rows (``spmv_design_rows_estimate``). For a matrix on the GPU those are all
that comes to the host: the coarse ``indptr`` first (one gather), from which the C core's own plan
(``spmv_sample_plan``) names the blocks, then their ``indptr`` and their columns (one gather each). The C core
ranks from them (``spmv_design_rows_sampled``) exactly as from the whole matrix on the host: the same rows, bit for
bit (tests compare them).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import mmap
from dataclasses import dataclass

import numpy as np

from .. import _core
from ..devices import arrays


@dataclass(frozen=True)
class SampledRows:
    """What rank() reads of a CSR matrix that lives on the GPU: its shape, its ``indptr`` at every
    ``SAMPLE_BLOCK``-th row and at ``nrows`` (``coarse``), and the rows of the sampled blocks. ``indptr`` and
    ``indices`` have the matrix's full lengths, but hold only the sampled rows (and ``indptr``'s ends): the C core
    reads nothing else of them (``spmv_design_rows_sampled``), and the rest is zeros that were never written, so
    the operating system maps no memory for them. ``data`` is empty: the values stay on the GPU."""

    shape: tuple[int, int]
    nnz: int
    indptr: np.ndarray
    indices: np.ndarray
    coarse: np.ndarray
    dtype: np.dtype
    name: str | None = None
    group: str | None = None

    @property
    def nrows(self) -> int:
        return self.shape[0]

    @property
    def ncols(self) -> int:
        return self.shape[1]

    @property
    def data(self) -> np.ndarray:
        """No values: they stay on the GPU (an empty array of the matrix's type)."""
        return np.empty(0, self.dtype)


def _untouched(n: int) -> np.ndarray:
    """``n`` int32 zeros in fresh anonymous memory, of which only the pages written are ever mapped, in pages of
    4 KiB rather than the transparent huge pages a large allocation may get: on the H200's host, sampling a
    1e7-entry matrix from CuPy took 6 ms with ``np.zeros`` arrays and 1-2 ms with these (a profile of the build;
    our reading is that the kernel zeroed whole 2 MiB pages where the sampled rows were written)."""
    if n == 0:
        return np.zeros(0, np.int32)
    buf = mmap.mmap(-1, 4 * n)
    advice = getattr(mmap, "MADV_NOHUGEPAGE", None)      # Linux only; elsewhere the system's pages
    if advice is not None:
        buf.madvise(advice)
    return np.frombuffer(buf, np.int32)


def _spans(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The int64 ranges ``[starts[k], starts[k] + lengths[k])`` one after another, with no Python loop (the loops
    over the 64 blocks took 0.13 of the sample's 0.88 ms at 5e6 entries on the dev VM, host arrays standing in)."""
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, np.int64)
    return np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(total, dtype=np.int64)


def sample_on_device(D: arrays.DeviceCSR, sample_rows: int, sample_nnz: int) -> SampledRows | None:
    """The rows of ``D`` that ``rank(estimate=True)`` reads, read to the host (:class:`SampledRows`), or None
    where the sample would take the exact path (no sample, one of half the matrix or more, or one that misses its
    long rows: then the whole matrix is needed).

    Raises
    ------
    ValueError
        ``D``'s ``indptr`` does not agree with itself (a sampled block's ends differ from its coarse copy's, or its
        last is not the entries' count), or is not non-decreasing within [0, nnz] where it was read.
    """
    n, ncols = D.shape
    B = _core.SAMPLE_BLOCK
    if n < 1 or ncols < 1:
        return None
    starts = np.arange(0, n, B, dtype=np.int64)
    coarse = arrays.take(D.indptr, np.append(starts, n)).astype(np.int32, copy=False)
    if int(coarse[-1]) != D.nnz or int(coarse[0]) != 0:
        raise ValueError(f"The 'A' parameter's indptr starts at {int(coarse[0])} and ends at {int(coarse[-1])}; a CSR "
                         f"matrix of {D.nnz:,} entries must start at 0 and end at {D.nnz:,}.")
    blocks = _core.sample_plan(coarse, n, sample_rows, sample_nnz)
    if blocks.size == 0:
        return None
    b64 = blocks.astype(np.int64)
    ends = np.minimum(b64 + B, n)
    lens = ends - b64 + 1                                     # a block's rows and the row after it (its end)
    rows = _spans(b64, lens)
    ip = arrays.take(D.indptr, rows).astype(np.int32, copy=False)
    # each block's ends against the coarse copy, and its rows non-decreasing within [0, nnz], before they say
    # which entries to read
    at = np.cumsum(np.append(0, lens))
    first, last = ip[at[:-1]], ip[at[1:] - 1]
    want_first, want_last = coarse[b64 // B], coarse[(ends + B - 1) // B]
    if not (np.array_equal(first, want_first) and np.array_equal(last, want_last)):
        raise ValueError("The 'A' parameter's indptr changed while it was read (a sampled block's ends differ from "
                         "the same rows read before); do not write to a matrix while pyspmv ranks it.")
    steps = np.diff(ip)
    steps[at[1:-1] - 1] = 0                                   # the step from one block to the next is no row's
    if (steps < 0).any() or ip.min(initial=0) < 0 or ip.max(initial=0) > D.nnz:
        raise ValueError(f"The 'A' parameter's indptr decreases or leaves [0, {D.nnz:,}] in the rows read: it is "
                         "not a CSR matrix's (pyspmv.Matrix(A.get()) names the first fault).")
    pos = _spans(first.astype(np.int64), (last - first).astype(np.int64))
    ix = arrays.take(D.indices, pos).astype(np.int32, copy=False) if pos.size else np.empty(0, np.int32)
    indptr, indices = _untouched(n + 1), _untouched(D.nnz)
    indptr[n] = D.nnz
    indptr[rows] = ip                     # adjacent blocks share an end row: the same value twice
    indices[pos] = ix
    return SampledRows(D.shape, D.nnz, indptr, indices, coarse, D.dtype)
