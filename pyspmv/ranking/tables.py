"""Value-table variants beside a ranking: a format whose values may be kept as indices into a table of the matrix's
distinct values (JAD's and CSR's ``vals``, :func:`pyspmv.convert`) moves fewer bytes a product where they fit.

The shipped models rank none of them: they were trained before value tables existed, and their features describe
the pattern, not the values. Where a configuration is timed before it is kept (a solve's probe,
:mod:`pyspmv.solvers`), a variant is worth timing beside the model's own picks; :func:`with_value_tables` predicts
its time from its base's, scaled by the bytes each moves (:func:`pyspmv.config_features`), an optimistic guess (on
the H200 a 2e7-entry stencil's JAD moved 0.56 of its bytes with ``vals=8`` and took 0.71 of its time,
docs/results/gpu.md) that the timing then settles."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np

from .. import _core
from ..matrices.configs import Config, config, format_param_names
from ..matrices.matrix import Matrix, value_dtype

#: The parameter of a format that keeps its values as a table (csrc/kernels.def's ``SPMV_PARAM_AXIS(VALS, vals)``).
PARAM = "vals"
#: The formats that keep a table whose variants a solve does not probe: CSR's (``pyspmv/csr/vector|adaptive/vals=``).
#: A variant joins the candidates at its base's predicted time times the bytes it moves over its base's; on the H200
#: CSR's moved a median 0.52 (float64) and 0.76 (float32) of their bases' bytes and took 0.96 and 1.01 of their time,
#: where JAD's took 0.77 and 0.90 (studies/2026-11-30-csr-tables-in-solves): CSR's would be probed ahead of
#: candidates that gain more.
NOT_PROBED = ("csr",)
#: Index widths a table may take, narrowest first (``spmv_vtab_size``: a table of at most ``2**bits`` values).
BITS = (8, 16)
#: Values sampled (evenly strided) to judge whether a table could hold a matrix's: a sample with more distinct values
#: than the widest table holds rules tables out without converting; one with fewer does not rule them in (the
#: conversion counts them all and refuses, :class:`pyspmv.NotApplicableError`).
SAMPLE = 1 << 16


def table_bits(M: Matrix) -> tuple[int, ...]:
    """The widths of :data:`BITS` whose tables might hold ``M``'s values, judged from a strided sample of
    :data:`SAMPLE` of them (by their bits: ``0.0`` and ``-0.0`` are two table entries); () where none can."""
    data = M.data
    step = max(1, data.size // SAMPLE)
    sample = np.ascontiguousarray(data[::step])
    # the bits as unsigned integers: a plain sort (a byte-row unique, axis=0, took 0.1 s and held the GIL)
    distinct = np.unique(sample.view(np.dtype(f"u{sample.itemsize}"))).size
    return tuple(b for b in BITS if distinct <= 1 << b)


def variants(cfg: Config, bits: tuple[int, ...]) -> list[Config]:
    """``cfg`` with its values in a table of each width of ``bits`` (none where its format keeps no table, or
    ``cfg`` keeps one already); only the configurations the registry has (:func:`pyspmv.configs` on the GPU)."""
    if PARAM not in format_param_names(cfg.format) or cfg.params.get(PARAM):
        return []
    out = []
    for b in bits:
        params = {**cfg.params, PARAM: b}
        try:
            out.append(config("/".join([cfg.kernel_id, *(f"{k}={v}" for k, v in params.items())])))
        except ValueError:              # outside the device's grid
            continue
    return out


def with_value_tables(M: Matrix, ranking: list[tuple[str, float]],
                      dtype: str) -> tuple[list[tuple[str, float]], dict[str, tuple[str, float]]]:
    """``ranking`` (configuration ids and predicted ms a product, fastest first) with the value-table variants of its
    fastest configuration of a format that keeps one and is not in :data:`NOT_PROBED`, each predicted at that
    configuration's time times the bytes it moves over the bytes its base moves, merged in order; and each variant's
    base and the base's predicted ms, by the variant's id (a variant's conversion may be refused). ``ranking`` itself
    where ``M``'s values fit no table (:func:`table_bits`) or no ranked configuration has a variant."""
    # the first such configuration only: config() of all 344 ids takes 1.3 ms (dev VM), the GIL held beside a solve
    first = next(((cid, ms, c) for cid, ms in ranking
                  if (c := config(cid)).format not in NOT_PROBED and PARAM in format_param_names(c.format)), None)
    bits = table_bits(M) if first is not None else ()
    vs = variants(first[2], bits) if first is not None and bits else []
    if first is None or not vs:
        return ranking, {}
    base = (first[0], first[1])
    # the core's size query as config_features() asks it, without the frame (pandas' first import holds the GIL
    # for tenths of a second, which a solve iterating beside this thread waits for at each chunk's end)
    ids = (base[0], *(v.id for v in vs))
    sizes = _core.config_sizes(ids, value_dtype(dtype).itemsize, float(_core.MAX_FILL_DEFAULT), M.nrows, M.ncols,
                               M.indptr, M.indices)
    moved = np.asarray(sizes[0], np.float64)
    if not (np.isfinite(moved).all() and moved[0] > 0):
        return ranking, {}
    extra = [(v.id, base[1] * float(moved[i + 1] / moved[0])) for i, v in enumerate(vs)]
    merged = sorted([*ranking, *extra], key=lambda e: e[1])     # stable: a tie keeps the model's first
    return merged, {v.id: base for v in vs}
