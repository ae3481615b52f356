"""A busy machine (issue 33, item 10): OpenMP's threads wait passively, benchmark() and `pyspmv bench`
say when other work took the CPUs the products needed, and other work is counted right."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

import pyspmv
from pyspmv.cli import main
from pyspmv.devices import machine
from pyspmv.devices.benchmark import BUSY_CPUS

# Subprocesses start in tests/, not the checkout's root, where the source tree's pyspmv (without its
# compiled modules) would come first on sys.path and shadow the installed one.
HERE = Path(__file__).resolve().parent

CFGS = ["cpu/csr/rows", "cpu/ell"]


def _env(**change: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env.update({k: v for k, v in change.items() if v is not None})
    return env


def test_openmp_waits_passively_unless_told_otherwise():
    """OpenMP's threads sleep while they wait (they spun before, and on a busy 2-core machine each product
    waited 8-16 ms for a descheduled thread); the environment's own policy is kept, and recorded."""
    code = "import os, pyspmv; print(os.environ['OMP_WAIT_POLICY'], pyspmv.device_info()['omp_wait_policy'])"
    for given, want in ((None, "passive passive"), ("active", "active active")):
        out = subprocess.run([sys.executable, "-c", code], env=_env(OMP_WAIT_POLICY=given), capture_output=True,
                             text=True, check=True, cwd=HERE).stdout
        assert out.split() == want.split()


def test_benchmark_warns_when_other_work_took_the_cpus(monkeypatch, capsys):
    """Issue 33: `pyspmv bench` reported 12.0 ms with a narrow spread and no warning (the true time:
    0.04 ms). Other work on the CPUs the products need is said, by benchmark() and by the command."""
    monkeypatch.setattr(machine.OtherWork, "cpus", lambda self: float(self.ncpus))
    A = pyspmv.generate("poisson2d", 30)
    with pytest.warns(pyspmv.BusyMachineWarning, match="other processes kept .* CPUs this process may use busy"):
        df = pyspmv.benchmark(A, CFGS, repeats=5, budget_s=0.01, progress=False)
    assert df.attrs["other_cpus"] == machine.OtherWork().ncpus and issubclass(pyspmv.BusyMachineWarning,
                                                                               pyspmv.NoisyTimingWarning)
    assert main(["bench", "--generate", "poisson2d:30", "--repeats", "5", "--budget", "0.01", "--quiet",
                 *[a for c in CFGS for a in ("--config", c)]]) == 0
    out, err = capsys.readouterr()
    assert "cpu/csr/rows" in out and err.startswith("pyspmv: warning: benchmark() of poisson2d_30: other processes")
    monkeypatch.setattr(machine.OtherWork, "cpus", lambda self: 0.0)
    with warnings.catch_warnings(record=True) as quiet:           # a quiet machine: nothing said
        warnings.simplefilter("always")
        pyspmv.benchmark(A, CFGS, repeats=5, budget_s=0.01, progress=False)
    assert not [w for w in quiet if issubclass(w.category, pyspmv.BusyMachineWarning)]


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="other work is counted from /proc/stat (Linux)")
def test_a_competing_busy_process_is_counted():
    """A `while True: pass` process beside a benchmark() is seen as about one CPU of other work."""
    threads, ncpus = machine.cpu_threads(), machine.OtherWork().ncpus
    if threads is None or threads < ncpus or ncpus < 2:
        pytest.skip(f"needs OpenMP threads on every usable CPU (threads {threads}, CPUs {ncpus}) and 2 CPUs or more")
    A = pyspmv.generate("poisson2d", 100)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        with pytest.warns(pyspmv.BusyMachineWarning):
            df = pyspmv.benchmark(A, CFGS, repeats=100000, budget_s=0.3, check=False, progress=False)
    finally:
        busy.kill()
        busy.wait()
    assert df.attrs["other_cpus"] > BUSY_CPUS


def test_other_work_is_unknown_over_a_short_window():
    w = machine.OtherWork()
    assert w.cpus() is None and 1 <= w.ncpus <= (os.cpu_count() or 1)
