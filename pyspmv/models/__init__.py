"""Runtime models of SpMV configurations: scikit-learn estimators trained on pyspmv.datasets tables.

Every model takes the design table ``X`` of :func:`pyspmv.datasets.load` (one row per matrix and
configuration) and runtimes ``y`` in ms. Regressors' ``predict(X)`` returns ms per row. Every model has
``rank_scores(X)`` (one score per row, lower is faster; regressors: the predicted ms) and
``predict_best(X, groups)`` (the chosen configuration per matrix). :class:`SVMModel` and
:class:`CascadeModel` are classifiers: ``predict(X)`` labels each row 1 (good / chosen) or 0.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from .analytic import GuoModel, WangModel
from .boosted import BoostedModel
from .classifiers import CascadeModel, SVMModel
from .forest import ForestModel
from .knn import KNNModel
from .linear import LinearModel

#: Model classes by the short name the ``train`` command and the benchmarks use.
MODELS: dict[str, type] = {"linear": LinearModel, "boosted": BoostedModel, "knn": KNNModel, "guo": GuoModel,
                           "wang": WangModel, "svm": SVMModel, "cascade": CascadeModel, "forest": ForestModel}

__all__ = ["MODELS", "BoostedModel", "CascadeModel", "ForestModel", "GuoModel", "KNNModel", "LinearModel", "SVMModel", "WangModel"]
