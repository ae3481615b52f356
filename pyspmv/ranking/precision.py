"""How far a model's predicted times can be read (:class:`Precision`), and the default recipe's measured figures.

A model records its own precision (:attr:`pyspmv.RankModel.precision`): the estimator that builds it states it
(``ForestModel``: :data:`DEFAULT_PRECISION` of the device), model files store it, and :func:`pyspmv.rank` reads it
to mark the ties of the pick and the rows of which only the order holds.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from typing import NamedTuple


class Precision(NamedTuple):
    """How far a model's predicted times can be read, as measured on held-out matrices.

    ``g`` below is a configuration's predicted time divided by the pick's (the configuration ranked
    first).

    Attributes
    ----------
    tie_tol : float
        The median error of ``g`` against the measured ratio over the configurations ranked 2 to 10
        (0.021: 2.1 %). A configuration with ``g <= 1 + tie_tol`` is a tie of the pick: the model
        cannot tell the two apart.
    max_gap : float
        Up to this ``g`` the predicted times read as times (the median error of every bin of ``g``
        below it is at most 10 %); beyond it only the order holds. The default forest caps each
        training slowdown at ``exp(clip)``, 1.65 times the best, so the predictions there understate
        the measured gaps, and by how much the model cannot say.
    source : str
        Where the figures were measured.
    """

    tie_tol: float
    max_gap: float
    source: str


#: The default recipe's figures per device, measured by benchmarks/rank_table.py (the default forest fitted on 75 % of
#: the dataset's matrices, split by matrix, as benchmarks/default_quality.py; the pick ranked as rank() ranks); the
#: per-rank and per-gap errors behind them, and how often ties measured within 5 % of the pick, are in its tables.
DEFAULT_PRECISION = {
    "cuda": Precision(0.021, 1.5, "the cuda default's recipe on held-out matrices of datasets/h100 "
                                  "(benchmarks/results/rank_table_h100.md)"),
    "cpu": Precision(0.087, 1.3, "the cpu default's recipe on held-out matrices of datasets/cpu "
                                 "(benchmarks/results/rank_table_cpu.md)"),
}

#: A shipped target's own figures, where measured on the data its default is trained on (benchmarks/rank_table.py
#: on those datasets): ``pyspmv train-default`` records them in that target's model file in place of the device's
#: (:data:`DEFAULT_PRECISION`, which for cuda the H100's data measured).
TARGET_PRECISION = {
    "h200": Precision(0.016, 1.5, "the cuda default's recipe on held-out matrices of the H200 datasets "
                                  "(benchmarks/results/rank_table_h200.md)"),
}

#: The cuda default recipe's measured error on the ratio to the pick by matrix size: ``(fewer stored entries than,
#: error)`` in increasing order, measured per band on held-out matrices of the H200 datasets the shipped default is
#: trained on (688 matrices, 2026-11-30) by benchmarks/verify_auto.py (benchmarks/results/verify_auto_h200.md): the
#: errors :attr:`Precision.tie_tol` takes the median of, pooled over the band, read as the median ``|x|`` of the
#: normal ``x`` with their mean ``|x|`` (they are heavy-tailed at scale, and the tails are what measuring buys). The error grows with size (the data
#: thins out at 1e6+ entries); ``rank(verify="auto")`` reads it through :func:`tie_tol_at`.
SIZE_TIE_TOL: dict[str, tuple[tuple[float, float], ...]] = {
    "cuda": ((1e5, 0.0212), (1e6, 0.0438), (float("inf"), 0.0621)),
}


def size_tol(device: str, nnz: int) -> float:
    """The device's measured model error at ``nnz`` stored entries (:data:`SIZE_TIE_TOL`; 0 where none is)."""
    return next((tol for hi, tol in SIZE_TIE_TOL.get(device, ()) if nnz < hi), 0.0)


def tie_tol_at(p: Precision, device: str, nnz: int) -> float:
    """The model's error on the ratio to the pick for a matrix of ``nnz`` stored entries: the larger of its own
    :attr:`Precision.tie_tol` and the device's measured error at that size (:func:`size_tol`; none: its own)."""
    return max(p.tie_tol, size_tol(device, nnz))
