"""Resumable dataset collection: features and every configuration x dtype per matrix, one part file each."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import csv
import datetime
import gzip
import json
import os
import re
import socket
import time
import traceback
import warnings
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from .._atomic import write_atomically
from .._core import DeviceUnavailableError
from .._params import OneOf, validate
from .._version import version
from ..devices.benchmark import COLUMNS, benchmark, device_info
from ..matrices.configs import Config, config
from ..matrices.configs import configs as all_configs
from ..matrices.features import CONFIG_FEATURE_NAMES, FEATURE_NAMES, config_features, features
from ..matrices.matrix import DTYPES, Matrix, value_dtype
from ..matrices.mmio import load
from .corpus import CorpusEntry

TIMING_COLUMNS = [*COLUMNS, *CONFIG_FEATURE_NAMES]
FEATURE_COLUMNS = ["matrix", "group", *FEATURE_NAMES]
FAILURE_COLUMNS = ["matrix", "group", "stage", "error"]
KEY = ["matrix", "dtype", "device", "config"]
_GZ = {"method": "gzip", "mtime": 0}                   # byte-identical files for identical tables
#: The part files of the matrix whose file name base (:func:`_safe`) is B, in ``<out>/parts``:
#: ``B.features.csv.gz``, then ``B.csv.gz`` (timings) or ``B.failed.csv.gz`` (what failed), written
#: last: it marks the matrix done. Names starting with ``.`` are writes in progress (``.tmp-*``), and
#: ``*.damaged`` parts that could not be read, moved aside (:func:`_set_aside`).
_KINDS = (".features", ".failed")
_DAMAGED = ".damaged"


class DamagedPartWarning(UserWarning):
    """A part file or the metadata of a collection could not be read: it was moved aside and its
    matrix is measured again (the metadata written anew)."""


def _safe(name: str) -> str:
    """The file name base of a matrix's parts: ``name`` with characters other than letters, digits
    and ``._+-`` replaced by ``_``; one the scheme would misread (hidden like the writes in progress,
    or ending as another kind of part: ``x.failed``'s timings would be read as the failure of ``x``)
    is put between ``=``, which no other name's base holds."""
    base = re.sub(r"[^A-Za-z0-9._+-]", "_", name)
    if not base or base.startswith(".") or base.endswith(_KINDS):
        base = f"={base}="
    return base


#: The longest file name base (:func:`_safe`) a matrix's parts can have: its longest part file name,
#: ``B.features.csv.gz.damaged``, within the 255 bytes that common file systems allow a file name.
MAX_BASE = 255 - len(".features.csv.gz" + _DAMAGED)


def printable(text: str) -> str:
    """``text`` as it may be printed: itself when every character is printable, else its ``repr`` (quoted,
    with escape sequences, control characters and a file name's undecodable bytes, ``\\udcff``, escaped).
    Names from the file system are printed through it."""
    return text if text.isprintable() else repr(text)


def check_names(named: Iterable[tuple[str, str]], where: str,
                fix: str = "rename the files (or matrices) named here") -> None:
    """Refuse, before anything is measured, names whose matrices could not each have part files of their own:
    the one check of :func:`collect` and of :func:`pyspmv.calibrate`'s own files.

    Parameters
    ----------
    named : iterable of (str, str)
        Each matrix's name and how a message shows it (its file, or its name; quoted, :func:`repr`).
    where : str
        What was given the names, as a message starts: ``"The 'matrices' parameter of collect()"``.
    fix : str
        What to do, as the message ends.

    Raises
    ------
    ValueError
        A name that is empty, not UTF-8 text (a file name's bytes that decode to none), too long for its part
        files' names (a base past :data:`MAX_BASE` characters), repeated, or sharing its part files with another
        name (:func:`_safe`: ``a b``, ``a;b``, ``a_b`` and ``aé``): each one named, all of a clash.
    """
    named = list(named)
    empty = sum(not n for n, _ in named)
    if empty:
        raise ValueError(f"{where} needs a name for every matrix; {empty} have an empty one.")
    wrong = []
    for n, shown in named:
        try:
            n.encode("utf-8")
        except UnicodeEncodeError:
            wrong.append(f"{shown} is not UTF-8 text (bytes that decode to no text show as \\udcXX)")
            continue
        if len(_safe(n)) > MAX_BASE:
            wrong.append(f"{shown} is too long: {len(_safe(n))} characters before its part files' suffixes, past "
                         f"the {MAX_BASE} that fit in a file name")
    bases: dict[str, list[tuple[str, str]]] = {}
    for n, shown in named:
        bases.setdefault(_safe(n), []).append((n, shown))
    for b, v in bases.items():
        if len(v) > 1:
            same = "the same name" if len({n for n, _ in v}) == 1 else "names sharing a file name"
            wrong.append(f"{same}: {' and '.join(shown for _, shown in v)} (parts {b!r})")
    if wrong:
        raise ValueError(f"{where} must have unique names, each UTF-8 text that gives part files of its own "
                         f"(characters other than letters, digits and ._+- are saved as _); {'; '.join(wrong)}. "
                         f"Nothing was measured: {fix}.")


def _as_entry(m: Any) -> CorpusEntry:
    if isinstance(m, CorpusEntry):
        return m
    if isinstance(m, Matrix):
        if not m.name:
            raise ValueError("The 'matrices' parameter of collect() needs named matrices; a Matrix has name=None.")
        return CorpusEntry(m.name, m.group or "", m.nnz, lambda m=m: m)
    if isinstance(m, (str, os.PathLike)):
        p = Path(m)
        name = p.name.lstrip(".").split(".")[0]         # .a.mtx: "a", not ""
        return CorpusEntry(name, p.parent.name, p.stat().st_size // 8 if p.exists() else 0,
                           lambda p=p, name=name: _load_path(p, name))
    raise TypeError(f"The 'matrices' parameter of collect() takes CorpusEntry, Matrix or paths. Got {type(m).__name__}.")


def _load_path(p: Path, name: str) -> Matrix:
    M = load(p)
    M.name, M.group = name, p.parent.name
    return M


def measure(entry: CorpusEntry, *, device: str, dtypes: tuple[str, ...], configs: list[Config] | None,
            repeats: int, warmup: int, budget_s: float) -> dict[str, Any]:
    """Everything :func:`pyspmv.datasets.collect` records about one matrix; never raises for a bad matrix.

    Builds the matrix, computes its features and times its configurations in each value type. Runs
    on Dask workers too.

    Parameters
    ----------
    entry : CorpusEntry
        The matrix (built here) and its name and group.
    device : str
        ``cpu`` or ``cuda``.
    dtypes : tuple of str
        The value types timed (``float32``, ``float64``).
    configs : list of Config or None
        The configurations timed; None: every configuration of ``device``.
    repeats, warmup : int
        Timed and untimed runs per configuration, as :func:`pyspmv.benchmark`.
    budget_s : float
        Timing budget per configuration (s), as ``pyspmv collect --budget``.

    Returns
    -------
    dict
        ``name``, ``timings`` (a DataFrame of ``TIMING_COLUMNS``, the rows of a dataset's timings
        table), ``features`` (a one-row DataFrame), ``failure`` (None, or a dict of
        ``FAILURE_COLUMNS`` with the stage that failed), ``device_info`` and ``worker`` (who measured it: host,
        Dask worker, ``CUDA_VISIBLE_DEVICES``, GPU name, and the seconds it took; None where nothing was timed).

    Raises
    ------
    DeviceUnavailableError
        ``device`` cannot run here (a bad matrix is recorded in ``failure`` instead).
    """
    out: dict[str, Any] = {"name": entry.name, "timings": None, "features": None, "failure": None,
                           "device_info": None, "worker": None}
    t0 = time.perf_counter()
    stage = "build"
    try:
        M = entry.build()
        M.name, M.group = entry.name, entry.group
        stage = "features"
        f = features(M)
        out["features"] = pd.DataFrame([{"matrix": entry.name, "group": entry.group, **f}], columns=FEATURE_COLUMNS)
        stage = "benchmark"
        cfgs = configs if configs is not None else all_configs(device)
        # every dtype in one call: one conversion per format, one upload per format and dtype
        df = benchmark(M, cfgs, device=device, dtype=list(dtypes), repeats=repeats, warmup=warmup,
                       budget_s=budget_s, progress=False)
        out["device_info"] = df.attrs["device_info"]
        out["worker"] = _worker(out["device_info"], time.perf_counter() - t0)
        parts = []
        for dt in dtypes:
            cf = config_features(M, cfgs, dtype=dt)[list(CONFIG_FEATURE_NAMES)]
            parts.append(df[df["dtype"] == dt].join(cf, on="config"))
        out["timings"] = pd.concat(parts, ignore_index=True)[TIMING_COLUMNS]
    except DeviceUnavailableError:
        raise
    except Exception as exc:  # noqa: BLE001 (a bad matrix is recorded, never fatal)
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        out.update(timings=None, failure={"matrix": entry.name, "group": entry.group, "stage": stage, "error": last})
    return out


def _worker(info: dict[str, Any], seconds: float) -> dict[str, Any]:
    """Who measured a matrix, and in how many ``seconds``: the host, the Dask worker's address (empty outside one),
    ``CUDA_VISIBLE_DEVICES`` as the process saw it (which GPU of the host a worker started with it owns) and the
    GPU's name."""
    try:
        from distributed import get_worker       # only on a Dask worker; optional dependency
        address = get_worker().address
    except (ImportError, ValueError):             # ValueError: not running on a worker
        address = ""
    return {"host": socket.gethostname(), "dask_worker": address,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", ""), "gpu_name": info.get("gpu_name", ""),
            "seconds": seconds}


#: Who measured the collection's matrices (:func:`_count_worker`), in ``<out>/parts``; what a damaged one costs.
_WORKERS = "workers.json"
_WORKERS_LOST = "and begun anew from the next matrix (the earlier counts are lost)"


def _count_worker(worker: dict[str, Any], parts: Path) -> None:
    """Add one matrix and its seconds to its worker's counts in ``parts/workers.json`` (the collection's metadata
    lists them)."""
    path = parts / _WORKERS
    seen = _read_json(path, _WORKERS_LOST) or {}
    key = " ".join(f"{k}={worker.get(k, '')}" for k in ("host", "dask_worker", "cuda_visible_devices", "gpu_name"))
    entry = seen.setdefault(key, {**worker, "matrices": 0, "seconds": 0.0})
    entry["matrices"] = int(entry.get("matrices", 0)) + 1
    entry["seconds"] = round(float(entry.get("seconds", 0.0)) + float(worker.get("seconds", 0.0)), 3)
    _write_json(seen, path)


def _write_csv(df: pd.DataFrame, path: Path) -> None:
    """Write atomically (:func:`pyspmv._atomic.write_atomically`)."""
    write_atomically(path, lambda tmp: df.to_csv(tmp, index=False, compression=_GZ), ".csv.gz")


def _write_json(obj: Any, path: Path) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=1, sort_keys=True, default=str)
            fh.write("\n")
    write_atomically(path, write, ".json")


def _set_aside(path: Path, why: str, then: str) -> None:
    """Rename an unreadable file to ``<name>.damaged`` (which no pattern of the scheme matches),
    saying which, why, and ``then`` (what happens next)."""
    aside = path.with_name(path.name + _DAMAGED)
    os.replace(path, aside)
    warnings.warn(f"{path} could not be read ({why}); moved to {aside.name} {then}.", DamagedPartWarning,
                  stacklevel=3)


def _unreadable(path: Path, columns: list[str]) -> str | None:
    """Why ``path`` is not a whole gzip CSV with ``columns`` in its header, or None when it is.
    Reading it to the end checks gzip's length and CRC, which a truncated or garbled file fails."""
    try:
        with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
            header = next(csv.reader([fh.readline()]), [])
            while fh.read(1 << 20):
                pass
    except (OSError, EOFError, UnicodeDecodeError, zlib.error, csv.Error) as exc:
        return f"{type(exc).__name__}: {exc}"
    missing = [c for c in columns if c not in header]
    return f"no column {missing[0]!r} in its header" if missing else None


def _save(result: dict[str, Any], parts: Path) -> None:
    """One matrix's part files; the timings (or failure) file is written last: it marks the matrix done."""
    base = _safe(result["name"])
    if result["features"] is not None:
        _write_csv(result["features"], parts / f"{base}.features.csv.gz")
    if result["device_info"] is not None:
        _write_json(result["device_info"], parts / "device_info.json")
    if result.get("worker") is not None:
        _count_worker(result["worker"], parts)
    if result["failure"] is not None:
        _write_csv(pd.DataFrame([result["failure"]], columns=FAILURE_COLUMNS), parts / f"{base}.failed.csv.gz")
    else:
        _write_csv(result["timings"], parts / f"{base}.csv.gz")


def _done(parts: Path, name: str) -> bool:
    """Whether ``name`` has a whole record in ``parts``: its timings and features, or its failure.
    A part that cannot be read is moved aside (:func:`_set_aside`), so that the matrix is measured again."""
    base = _safe(name)
    timings, failed = parts / f"{base}.csv.gz", parts / f"{base}.failed.csv.gz"
    feats = parts / f"{base}.features.csv.gz"
    if timings.exists():
        need = [(timings, TIMING_COLUMNS), (feats, FEATURE_COLUMNS)]      # features are written first
    elif failed.exists():
        need = [(failed, FAILURE_COLUMNS)] + ([(feats, FEATURE_COLUMNS)] if feats.exists() else [])
    else:
        return False
    whole = True
    for path, columns in need:
        why = _unreadable(path, columns) if path.exists() else "missing"
        if why is not None:
            whole = False
            if path.exists():
                _set_aside(path, why, f"and matrix {name!r} is measured again")
    return whole


def collect(matrices: Iterable[Any], out: str | os.PathLike[str], device: str = "cpu",
            dtypes: Iterable[str] = DTYPES, configs: Iterable[Config | str] | None = None,
            repeats: int = 200, warmup: int = 10, budget_s: float = 0.25, progress: bool = True,
            client: Any = None) -> Path:
    """Measure a dataset: features and every configuration x dtype of each matrix, resumably.

    Each finished matrix is written to ``<out>/parts/<matrix>.csv.gz`` (timings) and
    ``<out>/parts/<matrix>.features.csv.gz`` atomically, so a killed run loses at most the matrices
    in flight; a re-run skips matrices whose part exists. A matrix whose build, features or
    benchmark raises is recorded in ``parts/<matrix>.failed.csv.gz`` (and ``failures.csv.gz``) and
    skipped by later runs (delete that file to retry); configurations that fail are rows with
    benchmark()'s statuses. A part that cannot be read (a machine that stopped mid-write) is moved
    aside to ``<part>.damaged`` with a :class:`DamagedPartWarning`, and its matrix measured again.
    Finally the parts are consolidated (:func:`consolidate`) into ``timings.csv.gz``,
    ``features.csv.gz`` and ``metadata.json``.

    Parameters
    ----------
    matrices : iterable of CorpusEntry, Matrix or path
        Corpus entries (built one at a time), named Matrix objects, or Matrix Market files (name: the
        file name without extensions and leading dots, group: its folder's name). A part file's name is
        the matrix's with characters other than letters, digits and ``._+-`` saved as ``_``; one that would
        read as another kind of part (``x.failed``, ``.hidden``) is saved under its name between ``=``
        (``=x.failed=.csv.gz``). Names are checked before anything is measured (:func:`check_names`): an
        empty name, one that is not UTF-8 text (a file name's undecodable bytes), one too long for its part
        files (past :data:`MAX_BASE` characters) and names that repeat or share their part files (``a b``
        and ``a_b``) are refused with a ``ValueError`` that names each file or matrix; nothing is measured.
    out : path
        Output folder (created).
    device : {'cpu', 'cuda'}
    dtypes : iterable of {'float32', 'float64'}
    configs : iterable of Config or str, optional
        Default: every configuration of ``device``.
    repeats, warmup, budget_s
        As :func:`pyspmv.benchmark` (``budget_s`` per configuration).
    progress : bool
        A progress bar over matrices showing the current one.
    client : dask.distributed.Client, optional
        Spread matrices over a Dask cluster, one task per matrix; each worker measures whole matrices
        and the driver writes the parts as tasks complete (same files, same resume semantics). For
        GPUs, start one single-threaded worker per GPU with ``CUDA_VISIBLE_DEVICES`` set to it (e.g.
        ``CUDA_VISIBLE_DEVICES=i dask worker SCHEDULER --nworkers 1 --nthreads 1``), so that no two
        measurements share a device, and with ``OMP_NUM_THREADS`` its share of the host's cores (conversions
        and features run threaded on the host). Matrices go largest first. ``metadata.json``'s ``workers``
        lists who measured (host, Dask worker address, ``CUDA_VISIBLE_DEVICES``, GPU name), how many matrices
        each and the seconds they took (busy time, against the run's wall time: the idle share).

    Returns
    -------
    pathlib.Path
        ``out``.
    """
    dts = tuple(value_dtype(d, "dtypes").name for d in dtypes)
    if not dts:
        raise ValueError("The 'dtypes' parameter of collect() must name at least one dtype. Got none.")
    validate("collect()", {"device": OneOf(("cpu", "cuda"), "or")}, locals())
    cfgs = None if configs is None else [config(c) for c in configs]
    given = list(matrices)
    entries = [_as_entry(m) for m in given]
    check_names([(e.name, repr(str(m)) if isinstance(m, (str, os.PathLike)) else repr(e.name))
                 for m, e in zip(given, entries)], "The 'matrices' parameter of collect()")
    root = Path(out)
    parts = root / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    for stale in parts.glob(".tmp-*"):                         # left by a killed run
        stale.unlink(missing_ok=True)
    todo = [e for e in entries if not _done(parts, e.name)]
    kw = {"device": device, "dtypes": dts, "configs": cfgs, "repeats": repeats, "warmup": warmup,
          "budget_s": budget_s}
    params = {"device": device, "dtypes": list(dts), "repeats": repeats, "warmup": warmup, "budget_s": budget_s,
              "configs": "all" if cfgs is None else [c.id for c in cfgs]}
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    bar = tqdm(total=len(entries), initial=len(entries) - len(todo), desc="collect", unit="matrix",
               disable=not progress)
    with bar:
        for result in _run(todo, kw, client, bar):
            _save(result, parts)
            bar.update()
    return consolidate(root, params=params, started=started)


def _run(todo: list[CorpusEntry], kw: dict[str, Any], client: Any, bar: Any) -> Iterator[dict[str, Any]]:
    if client is None:
        for e in todo:
            bar.set_postfix_str(f"{printable(e.name)} ({e.nnz:.2g} nnz)")
            yield measure(e, **kw)
        return
    from dask.distributed import as_completed

    # largest first, and ahead in the scheduler's queue: a large matrix (tens of seconds) left to the end would
    # keep one worker busy while the others idle (longest-processing-time-first balances the workers' loads)
    order = sorted(todo, key=lambda e: -e.nnz)
    futures = {client.submit(measure, e, pure=False, priority=int(e.nnz), **kw): e for e in order}
    bar.set_postfix_str(f"{len(futures)} tasks")
    for fut in as_completed(futures):
        e = futures[fut]
        try:
            result = fut.result()
        except DeviceUnavailableError:
            raise
        except Exception as exc:  # noqa: BLE001 (a lost worker, e.g. a crashed kernel, fails its matrix only)
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            result = {"name": e.name, "timings": None, "features": None, "device_info": None, "worker": None,
                      "failure": {"matrix": e.name, "group": e.group, "stage": "worker", "error": last}}
        bar.set_postfix_str(printable(e.name))
        yield result
        fut.release()


_TEXT = ("matrix", "group", "dtype", "device", "config", "status", "note", "stage", "error")


def read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A dataset CSV table: text columns stay text ("" when empty, never NaN; a matrix named "NA" stays
    "NA"), empty numeric fields are NaN."""
    numeric = [c for c in (*TIMING_COLUMNS, *FEATURE_NAMES) if c not in _TEXT]
    return pd.read_csv(path, keep_default_na=False, na_values={c: [""] for c in numeric},
                       dtype={c: str for c in _TEXT}, low_memory=False)


def _read_parts(paths: list[Path], columns: list[str]) -> pd.DataFrame:
    """The parts' rows; a part that cannot be read is moved aside (its matrix is measured again by
    the next collect() that lists it)."""
    frames = []
    for p in paths:
        try:
            f = read_table(p)[columns]
        except (OSError, EOFError, UnicodeDecodeError, zlib.error, ValueError, KeyError) as exc:
            # ValueError: pandas' EmptyDataError and ParserError; KeyError: a column missing
            _set_aside(p, f"{type(exc).__name__}: {exc}", "and left out; the next collect() of its matrix measures it "
                       "again")
            continue
        if len(f):
            frames.append(f)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _read_json(path: Path, then: str) -> dict[str, Any] | None:
    """``path``'s JSON object, or None when it is absent or cannot be read as one (then moved aside,
    saying ``then``)."""
    if not path.exists():
        return None
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        obj, why = None, f"{type(exc).__name__}: {exc}"
    else:
        why = None if isinstance(obj, dict) else f"a JSON {type(obj).__name__}, not an object"
    if why is not None:
        _set_aside(path, why, then)
        return None
    return obj


def consolidate(out: str | os.PathLike[str], *, params: dict[str, Any] | None = None,
                started: str | None = None) -> Path:
    """Merge ``<out>/parts`` into ``timings.csv.gz``, ``features.csv.gz``, ``failures.csv.gz`` (when any
    matrix failed) and ``metadata.json``; sorted by matrix (then dtype, in configuration order), without
    duplicates. ``params`` (collection parameters) are recorded, else kept from the existing metadata.
    A part or ``metadata.json`` that cannot be read is moved aside (``*.damaged``) with a
    :class:`DamagedPartWarning`: the part left out, the metadata written anew.
    """
    root = Path(out)
    parts = root / "parts"
    if not parts.is_dir():
        raise FileNotFoundError(f"The 'out' parameter of consolidate() must be a collection folder; {parts} is missing.")
    t_files = sorted(p for p in parts.glob("[!.]*.csv.gz") if not p.name.endswith(tuple(k + ".csv.gz" for k in _KINDS)))
    timings = _read_parts(t_files, TIMING_COLUMNS)
    timings = timings.drop_duplicates(KEY, keep="last").sort_values(["matrix", "dtype"], kind="stable")
    feats = _read_parts(sorted(parts.glob("[!.]*.features.csv.gz")), FEATURE_COLUMNS)
    feats = feats.drop_duplicates("matrix", keep="last").sort_values("matrix", kind="stable")
    fails = _read_parts(sorted(parts.glob("[!.]*.failed.csv.gz")), FAILURE_COLUMNS).sort_values("matrix")
    _write_csv(timings, root / "timings.csv.gz")
    _write_csv(feats, root / "features.csv.gz")
    if len(fails):
        _write_csv(fails, root / "failures.csv.gz")
    meta_path = root / "metadata.json"
    meta = _read_json(meta_path, "and written anew from the parts: what only it held (the earlier runs' dates, the "
                      "collection's parameters when not given) is lost; copy what you need from the moved file") or {}
    info = _read_json(parts / "device_info.json", "(the next matrix measured writes it again)")
    if info is not None:
        meta["device_info"] = info
    elif "device_info" not in meta and params is not None:
        try:
            meta["device_info"] = device_info(params["device"])
        except Exception as exc:  # noqa: BLE001 (metadata without a device is still written)
            meta["device_info"] = {"device": params["device"], "error": str(exc)}
    workers = _read_json(parts / _WORKERS, _WORKERS_LOST)
    if workers:
        meta["workers"] = [workers[k] for k in sorted(workers)]

    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    meta.update({
        "pyspmv_version": version(),
        "updated": now,
        "n_matrices": int(timings["matrix"].nunique()),
        "n_rows": len(timings),
        "n_failed_matrices": len(fails),
        "status_counts": {str(k): int(v) for k, v in timings["status"].value_counts().items()},
        "groups": {str(k): int(v) for k, v in feats["group"].value_counts().sort_index().items()},
    })
    if params is not None:
        meta["collection"] = params
    if started is not None:
        meta.setdefault("runs", []).append({"started": started, "finished": now})
        meta.setdefault("first_started", started)
    _write_json(meta, meta_path)
    return root
