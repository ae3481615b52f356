"""The training layer's defaults that the command line shows: calibration's limits and budgets, the default
recipe's model kinds and bytes prior. A module of constants, so that ``pyspmv --help`` needs no scikit-learn."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

#: Default wall-time limit of a calibration, model adaptation included (the target: 3 minutes on the
#: 2-core dev VM).
TIME_LIMIT_S = 170.0
#: Seconds of the limit kept for adapting the model after measuring, per device: on the 2-core dev VM
#: cross-validation of every candidate and the final fit took 5 s for 40 matrices against datasets/cpu,
#: and 39 s plus 12 s for 67 matrices against datasets/h100 (three times the rows, 135 configurations);
#: a cuda calibration on the H100 overran a 170 s limit by 76 s with 20 s kept, and by 28 s with 60 s,
#: until the shipped rows stopped costing 10.6 s per retrained fold (adapt._measured_here): 126 s in all.
#: Beyond the reserve, a retrained candidate foreseen to end past the limit is skipped
#: (:func:`pyspmv.training.adapt.cross_validate`'s ``deadline``).
ADAPT_RESERVE_S = {"cpu": 20.0, "cuda": 60.0}
#: A configuration whose q75/q25 exceeds this after measuring is measured again (a busy machine
#: spreads the runs), up to RETRIES times, keeping the tightest timing.
MAX_SPREAD = 1.3
RETRIES = 2
#: Matrices timed a second time after measuring: the cheapest of the first 2 x REPEAT_MATRICES measured this
#: run (the longest gap), within REPEAT_SHARE of the time limit, kept from measuring for it. A busy machine
#: spreads runs within one timing (the rule above); a drifting one moves whole timings between the start and
#: the end, which no single timing shows: one Xeon host's two collections of the same matrices 2 minutes apart
#: differed by a median 17.5 %, and the first's fastest configurations, timed again, were 1.087 from the best
#: (benchmarks/results/calibrate_xeon2.md). What this finds is reported (Calibration.repeat), not corrected.
REPEAT_MATRICES = 3
REPEAT_SHARE = 0.05
#: Median drift above which the CLI says that rankings on this machine cannot be judged finer than it.
DRIFT_NOTE = 0.05
#: Median drift above which calibrate() saves no model (:class:`BusyMachineError`): the machine was
#: busy while measuring, and a model adapted to such timings ranks by the load, not by the kernels.
#: Quiet machines drifted by 5.6 % to 17.5 % (Xeon hosts, benchmarks/results/calibrate_xeon*.md); a
#: 2-core VM beside other work by 114971.8 %, and its model's picks averaged 2.53x the best (issue 33).
MAX_DRIFT = 0.5
#: Candidate matrices: the standard corpus up to this many stored entries.
MAX_NNZ = 1e6
#: Timing budget per configuration (s), as ``pyspmv collect --budget``.
BUDGET_S = 0.05

#: The model kinds' short names, defined here without importing scikit-learn so that the command line
#: lists them cheaply; ``pyspmv.models.MODELS`` maps the same names to their classes (a test checks).
MODELS = ("forest", "boosted", "linear", "knn", "svm", "cascade", "guo", "wang")


#: ForestModel's ``bytes_prior`` in the default of each device (none: 0): kept for cuda by the rule fixed
#: before the cross-validation inside h100's training matrices of studies/2026-11-24-pick-rules/
#: (pick_rules_h100.md); on datasets/cpu no value was kept (pick_rules_cpu.md).
BYTES_PRIOR = {"cuda": 0.05}
