"""Shared helpers of the benchmark reports: Markdown pipe tables (tabulate, which DataFrame.to_markdown needs,
is not a dependency) and the provenance line every table starts with (command, machine, date, commit).

The scripts of ``benchmarks/`` import it as a sibling module (``python benchmarks/<script>.py``); the studies
through ``studies/_common.py``. ``python benchmarks/_md.py COMMAND...`` prints the provenance line of a run
of COMMAND (for ``gpu_build.sh``).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import datetime
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def md_row(cells: Iterable[object]) -> str:
    """One table line, ``| a | b |``, each cell as ``str()``."""
    return "| " + " | ".join(map(str, cells)) + " |"


def md_header(headers: Sequence[object], align: str = "", *, tight: bool = False) -> list[str]:
    """The header line and the separator line.

    Parameters
    ----------
    headers : sequence
        Column titles.
    align : str
        One letter per column, ``l`` (``---``) or ``r`` (``---:``); columns past its end are ``l``.
    tight : bool
        Spell the separator ``|---|---|`` instead of ``| --- | --- |`` (the spelling some committed
        reports have; both render alike).
    """
    if len(align) > len(headers) or set(align) - {"l", "r"}:
        raise ValueError(f"The 'align' parameter of md_header() must be at most {len(headers)} letters l or r. "
                         f"Got {align!r} instead.")
    marks = ["---:" if a == "r" else "---" for a in align.ljust(len(headers), "l")]
    return [md_row(headers), "|" + "|".join(marks) + "|" if tight else md_row(marks)]


def md_table(headers: Sequence[object], rows: Iterable[Iterable[object]], align: str = "", *,
             tight: bool = False) -> list[str]:
    """The lines of a whole table: :func:`md_header`, then :func:`md_row` of each row."""
    return [*md_header(headers, align, tight=tight), *(md_row(r) for r in rows)]


def md_frame(df: pd.DataFrame) -> str:
    """A pipe table of ``df``, floats to 3 significant digits."""
    def cell(v: object) -> str:
        return f"{v:.3g}" if isinstance(v, float) else str(v)
    rows = ((cell(v) for v in row) for row in df.itertuples(index=False))
    return "\n".join(md_table(df.columns, rows, tight=True)) + "\n"


def summary(per: pd.DataFrame) -> str:
    """The cells ``within 5 % | beyond 20 % | geomean | n`` of a per-matrix frame of
    :func:`pyspmv.evaluate.evaluate` (``bucket``, ``slowdown``, ``ratio``); dashes when it is empty."""
    if per.empty:
        return "– | – | – | 0"
    within = (per["bucket"] == "<5%").mean() if "<5%" in set(per["bucket"]) else (per["slowdown"] < 0.05).mean()
    beyond = (per["slowdown"] > 0.20).mean()
    geo = float(np.exp(np.mean(np.log(per["ratio"]))))
    return f"{100 * within:.1f} % | {100 * beyond:.1f} % | {geo:.3f} | {len(per)}"


def command(argv: Sequence[str] | None = None) -> str:
    """How this run was started, as one shell line from the repository root: ``python <script> <arguments>``."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0]).resolve() if argv else Path("?")
    try:
        script = script.relative_to(ROOT)
    except ValueError:
        pass
    return shlex.join(["python", str(script), *argv[1:]])


def commit() -> str:
    """The checkout's commit (short hash), ``+ local changes`` where the working tree differs from it; ``unknown``
    outside a git checkout."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head} + local changes" if dirty else head


def machine(device: str = "cpu") -> str:
    """The machine in words: processor and cores (threads as ``OMP_NUM_THREADS`` sets them), and the GPU for
    ``device="cuda"``; Python, NumPy and pyspmv versions."""
    import pyspmv  # here, not at the top: ``python benchmarks/_md.py`` runs where pyspmv may be unbuilt

    info = pyspmv.device_info(device)
    text = f"{info['processor'] or platform.processor() or info['machine']}, {info['cpu_count']} cores"
    if info.get("omp_num_threads"):
        text += f" (OMP_NUM_THREADS={info['omp_num_threads']})"
    if device == "cuda":
        text += f"; {info.get('gpu_name', 'GPU')}"
    return (f"{text}; {platform.system()}, Python {info['python']}, NumPy {info['numpy']}, "
            f"pyspmv {pyspmv.__version__}")


def gpu_software(info: dict) -> str:
    """The GPU's SM count, L2 and software versions, as a results page states them under its provenance line
    (``info``: ``pyspmv.devices.gpu.device_info()``, asked before anything of the run): the L2's persisting set-aside
    as this process found it, since hosts of the same GPU differ there and so do solves that keep their vectors in
    L2 (``studies/2026-11-30-solver-vectors-in-l2``)."""
    mib = 2.0**20
    l2 = (f"L2 {info['l2_bytes'] / mib:.1f} MiB, set-aside {info.get('l2_persist_limit', 0) / mib:.2f} of "
          f"{info.get('l2_persist_max', 0) / mib:.1f} MiB at start")
    return (f"{info['sm_count']} SMs, {l2}, driver {info['driver_version']}, CUDA runtime {info['runtime_version']}, "
            f"cuSPARSE {info['cusparse_version']}")


def provenance(device: str = "cpu", *, host: str | None = None, argv: Sequence[str] | None = None) -> str:
    """The provenance line a table starts with, under its title: command, machine, date (UTC), git commit.

    Parameters
    ----------
    device : str
        ``"cuda"`` adds the GPU to the machine's description.
    host : str, optional
        The machine in words, where the script knows better (``--machine``); by default :func:`machine`.
    argv : sequence of str, optional
        The command (default ``sys.argv``).
    """
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"Provenance: `{command(argv)}`; machine: {host or machine(device)}; date: {when}; "
            f"commit: {commit()}.")


def write_report(path: str | os.PathLike[str], title: str, lines: Iterable[str], *, device: str = "cpu",
                 host: str | None = None) -> str:
    """Write a Markdown report: ``# title``, the :func:`provenance` line, then ``lines``; return its text."""
    text = "\n".join([f"# {title}", "", provenance(device, host=host), "", *lines]) + "\n"
    Path(path).write_text(text, encoding="utf-8")
    return text


def csv_provenance(device: str = "cpu", *, host: str | None = None) -> str:
    """The provenance line as the first line of a CSV table (``# ...``; ``pandas.read_csv(..., comment="#")``)."""
    return "# " + provenance(device, host=host) + "\n"


if __name__ == "__main__":
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.machine()) if Path("/proc/cpuinfo").exists() else "?"
    print(f"Provenance: `{shlex.join(sys.argv[1:])}`; machine: {cpu}, {os.cpu_count()} cores; date: "
          f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; commit: {commit()}.")
