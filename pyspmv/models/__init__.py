"""Runtime models of SpMV configurations: scikit-learn estimators trained on pyspmv.datasets tables.

Every model takes the design table ``X`` of :func:`pyspmv.datasets.load` (one row per matrix and
configuration) and runtimes ``y`` in ms. Regressors' ``predict(X)`` returns ms per row. Every model has
``rank_scores(X)`` (one score per row, lower is faster; regressors: the predicted ms) and
``predict_best(X, groups)`` (the chosen configuration per matrix; ``groups``, the matrix of each row,
is required by every fit and pick: rows are never matched to matrices by their features).
:class:`SVMModel` and :class:`CascadeModel` are classifiers: ``predict(X)`` labels each row 1 (good /
chosen) or 0 (the cascade's ``predict(X, groups)`` picks one row per matrix).

Open schema: every estimator but the analytic Guo and Wang models also fits a user's own table. Its
``features`` and ``params`` parameters (None: pyspmv's) name the matrix statistics and the
configuration parameter columns; X then holds ``config`` (any ids), those columns and optionally
``value_bytes``. Signed statistics keep their sign and missing values are imputed
(:class:`FeatureTransform`); a column the model would not read is an error. The fitted model records
``schema_``, ``feature_tf_`` and ``configs_``, and :func:`pyspmv.export_c` / :func:`pyspmv.save_model`
carry them: the exported header ranks the user's configurations from the user's feature vector.

scikit-learn's model selection: ``fit`` needs ``groups`` as much as a group splitter (``GroupKFold``)
does, and scikit-learn gives both the same ``groups`` only through metadata routing, which every
estimator here requests by default for ``fit`` (no ``set_fit_request`` needed)::

    import sklearn
    from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score
    sklearn.set_config(enable_metadata_routing=True)          # or: with sklearn.config_context(...)
    cross_val_score(model, X, y, cv=GroupKFold(5), params={"groups": g})
    GridSearchCV(model, grid, cv=GroupKFold(5)).fit(X, y, groups=g)

Without routing (scikit-learn's default) ``cross_val_score(..., groups=g)`` and ``GridSearchCV.fit(X, y,
groups=g)`` give ``g`` to the splitter only, and ``fit`` refuses to guess the matrices: its error says
so. There, pass it to both: ``cross_val_score(model, X, y, cv=GroupKFold(5), groups=g,
params={"groups": g})`` (``params`` is sliced to each training fold). ``set_fit_request(groups=False)``
turns the default off.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from ._schema import FeatureTransform, Schema
from .analytic import GuoModel, WangModel
from .boosted import BoostedModel
from .classifiers import CascadeModel, SVMModel
from .forest import ForestModel
from .knn import KNNModel
from .linear import LinearModel

#: Model classes by the short name the ``train`` command and the benchmarks use: the one list of
#: estimators (a new one is its module, imported above, and one entry here).
MODELS: dict[str, type] = {"linear": LinearModel, "boosted": BoostedModel, "knn": KNNModel, "guo": GuoModel,
                           "wang": WangModel, "svm": SVMModel, "cascade": CascadeModel, "forest": ForestModel}

__all__ = ["MODELS", "FeatureTransform", "Schema"] + [c.__name__ for c in MODELS.values()]
