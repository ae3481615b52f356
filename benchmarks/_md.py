"""Markdown pipe tables for the benchmark reports (tabulate, which DataFrame.to_markdown needs, is not a
dependency). The scripts import it as a sibling module (``python benchmarks/<script>.py``)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from collections.abc import Iterable, Sequence


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
