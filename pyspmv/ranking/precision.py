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
