"""OpenMP's wait policy for the core's threads, set before the core loads the OpenMP runtime:
``pyspmv/__init__.py`` imports this module before anything that imports ``pyspmv._core``."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os

#: OpenMP threads waiting for work sleep instead of spinning (``OMP_WAIT_POLICY=passive``) unless the
#: environment says otherwise. Under libgomp's default (each waiting thread spins for about 3 ms
#: first), a product on a machine where other work runs waits at its closing barrier for a thread
#: the scheduler took away, while the spinning threads keep the cores that thread needs: on the
#: 2-core dev VM beside other processes, products of 0.01 to 0.13 ms took 8 to 18 ms; passive, 0.03
#: to 0.27 ms (benchmarks/results/busy_machine.md). Passive, each threaded product pays for waking
#: its threads, 0.04 to 0.06 ms on the idle VM (0.05 instead of 0.01 ms on 50,000 entries, 0.15
#: instead of 0.09 ms on 450,000): ``OMP_WAIT_POLICY=active`` gives it back on a machine of one's
#: own. libgomp and LLVM's libomp read the variable once, when the runtime is loaded: one that
#: another library loaded before pyspmv keeps its own policy. Child processes inherit the variable.
WAIT_POLICY = os.environ.setdefault("OMP_WAIT_POLICY", "passive")
