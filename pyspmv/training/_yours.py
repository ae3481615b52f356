"""calibrate()'s own matrices: the user's Matrix Market files (``calibrate(matrices=...)``), their names
checked before anything is measured, and the files that failed when measured."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..datasets import folder_corpus
from ..datasets.collect import check_names, printable
from ..datasets.corpus import CorpusEntry
from ..matrices.mmio import load as load_mtx

#: The group of the user's own matrices (``calibrate(matrices=...)``) in the measurements: ``user``, or
#: ``user:<kind>`` from a MANIFEST.csv; what tells them apart from the generated ones when judging.
USER_GROUP = "user"
MTX_SUFFIXES = (".mtx", ".mtx.gz", ".mtx.bz2")


#: How :func:`user_matrices` refuses names (:func:`pyspmv.datasets.collect.check_names`): who was given them, and
#: what to do.
_REFUSED = ("The 'matrices' folder of calibrate()",
            ("rename your files named here (a name of pyspmv's own matrices, shown with its group, is taken)"))


def _user_load(path: Path, name: str, group: str) -> Any:
    M = load_mtx(path)
    M.name, M.group = name, group
    return M


def user_matrices(path: Any, taken: Iterable[CorpusEntry] = ()) -> tuple[list[CorpusEntry], list[tuple[str, str]]]:
    """The Matrix Market files of folder ``path`` as corpus entries (group :data:`USER_GROUP`), smallest
    file first, and the files skipped with their reason. With a ``MANIFEST.csv`` the folder is read as
    :func:`pyspmv.datasets.folder_corpus` reads it (its ``kind`` after ``user:``); without one, every
    ``NAME.mtx`` (``.gz``, ``.bz2``) file is a matrix named NAME, and any other file is skipped. A file that
    cannot be read is found when it is measured (its failure recorded as :func:`pyspmv.collect` records it).
    The names are checked first, as :func:`pyspmv.collect` checks its own
    (:func:`pyspmv.datasets.collect.check_names`), together with those of ``taken`` (corpus entries:
    calibration's own matrices, :func:`_candidates`), so that a file never shares its measurements with
    another file or with one of pyspmv's matrices.

    Raises
    ------
    FileNotFoundError
        ``path`` is not a folder.
    ValueError
        A matrix name that is not UTF-8 text, is too long for its part files, or shares its part files with
        another file's or with one of ``taken`` (``a b.mtx`` and ``a_b.mtx``, ``a.mtx`` and ``a.mtx.gz``,
        ``bcspwr08.mtx`` and the shipped real matrix): each file named; nothing is measured.
    """
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"The 'matrices' parameter of calibrate() must be a folder of Matrix Market files; "
                                f"{str(root)!r} is not a folder.")
    named = [(e.name, f"{e.name!r} ({e.group})") for e in taken]
    if (root / "MANIFEST.csv").is_file():
        listed = folder_corpus(root)
        check_names([(e.name, f"{e.name!r} (MANIFEST.csv)") for e in listed] + named, *_REFUSED)
        return [CorpusEntry(e.name, f"{USER_GROUP}:{e.group}", e.nnz, e.build) for e in listed], []
    entries, bad, mine = [], [], []
    for f in sorted(root.iterdir()):
        if f.name.startswith("."):
            continue
        if not f.is_file():
            bad.append((f.name, "not a file"))
            continue
        suffix = next((x for x in MTX_SUFFIXES if f.name.endswith(x)), None)
        if suffix is None:
            bad.append((f.name, f"not a Matrix Market file (the names read end in {', '.join(MTX_SUFFIXES)})"))
            continue
        name = f.name[:-len(suffix)]
        size = f.stat().st_size // (24 if suffix == ".mtx" else 8)     # about 24 bytes a text entry
        entries.append(CorpusEntry(name, USER_GROUP, size, lambda f=f, name=name: _user_load(f, name, USER_GROUP)))
        mine.append((name, repr(f.name)))
    check_names(mine + named, *_REFUSED)
    return sorted(entries, key=lambda e: (e.nnz, e.name)), bad


def _failures(folder: Path, names: dict[str, str]) -> list[tuple[str, str]]:
    """The user's files (``names``: matrix -> file) whose measurement failed, with the stage and error."""
    import pandas as pd
    f = folder / "failures.csv.gz"
    if not f.is_file() or not names:
        return []
    t = pd.read_csv(f, dtype=str).fillna("")
    what = {"build": "could not be read", "features": "its features could not be computed",
            "benchmark": "could not be timed"}
    return [(names[r.matrix], f"{what.get(r.stage, r.stage)}: {' '.join(str(r.error).split())}") for r in t.itertuples()
            if r.matrix in names]



def given_matrices(matrices: Any, only_matrices: bool, taken: Iterable[CorpusEntry]
                   ) -> tuple[list[CorpusEntry], list[tuple[str, str]]]:
    """calibrate()'s own matrices (:func:`user_matrices`, their names checked with those of ``taken``): the
    entries and the files refused, with why; none without ``matrices``."""
    if only_matrices and matrices is None:
        raise ValueError("The 'only_matrices' parameter of calibrate() needs 'matrices' (a folder of Matrix Market "
                         "files).")
    if matrices is None:
        return [], []
    mine, bad = user_matrices(matrices, taken)
    if not mine:
        raise ValueError(f"calibrate() found no Matrix Market file (NAME.mtx, .mtx.gz, .mtx.bz2) in "
                         f"matrices={str(matrices)!r}" + "".join(f"; {printable(f)}: {why}" for f, why in bad))
    return mine, bad


def failed_files(matrices: Any, mine: list[CorpusEntry], folder: Path) -> list[tuple[str, str]]:
    """The files of ``mine`` (from folder ``matrices``) whose measurement in ``folder`` failed, with why."""
    if not mine:
        return []
    root = Path(matrices)
    files = {e.name: next((e.name + x for x in MTX_SUFFIXES if (root / (e.name + x)).is_file()), e.name)
             for e in mine}
    return _failures(folder, files)
