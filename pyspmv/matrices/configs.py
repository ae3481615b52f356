"""Configurations: a storage format, a kernel and its parameters, read from the C registry."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _core
from .._params import OneOf, validate
from .matrix import VALUE_BYTES

if TYPE_CHECKING:                       # imported where a frame is made: pandas costs 0.4 s to import
    import pandas as pd

DEVICES = ("cpu", "cuda")
FORMATS: tuple[str, ...] = tuple(_core.format_names())
#: The p_* design-row columns, one per parameter name of csrc/kernels.def's SPMV_PARAM list, in order.
PARAM_COLUMNS: tuple[str, ...] = tuple(c for c in _core.design_columns()[_core.NFEATURES:] if c.startswith("p_"))


@dataclass(frozen=True)
class Config:
    """One runnable SpMV configuration.

    Attributes
    ----------
    id : str
        Stable identifier ``library/format[/kernel][/name=value...]``, e.g. ``cpu/sell/c=8/sigma=64``
        or ``pyspmv/csr/vector/tpv=8/bs=256``.
    library : {'cpu', 'pyspmv', 'cusparse'}
        The id's first field: pyspmv's CPU kernels, its own CUDA kernels, or cuSPARSE.
    format : str
        The storage format.
    kernel : str or None
        The kernel name where a format has several (``cpu/csr/rows``, ``pyspmv/csr/vector``,
        ``cusparse/csr/alg2``).
    params : dict
        Named parameters, as in the id: the format's (``c``, ``sigma``, ...) and, on the GPU, the
        thread mapping (``tpv`` threads per row, ``bs`` threads per block).
    device : {'cpu', 'cuda'}
    deterministic : bool
        Whether every run gives the same bits.
    launches : int
        GPU kernel launches and memsets per product (0 on the CPU).
    cusparse_format : str or None
        For a cuSPARSE configuration, the ``cusparseFormat_t`` of the matrix descriptor it makes,
        as ``cusparse.h`` names it: ``'CUSPARSE_FORMAT_CSR'``, ``'CUSPARSE_FORMAT_COO'``,
        ``'CUSPARSE_FORMAT_SLICED_ELLPACK'`` (C = ``c``, no row permutation) or
        ``'CUSPARSE_FORMAT_BSR'`` (row-major ``b`` x ``b`` blocks); None for the others.
    cusparse_alg : str or None
        For a cuSPARSE configuration, the ``cusparseSpMVAlg_t`` it passes to ``cusparseSpMV``
        (``'CUSPARSE_SPMV_CSR_ALG2'`` for ``cusparse/csr/alg2``, ``'CUSPARSE_SPMV_ALG_DEFAULT'``
        for ``cusparse/csr/default``); None for the others. Both come from the registry line that
        kernels/cusparse.cu runs (csrc/kernels.def), so that a program calling cuSPARSE itself
        reproduces the configuration with them.
    """

    id: str
    library: str
    format: str
    kernel: str | None
    params: dict[str, int] = field(hash=False, compare=False)
    device: str
    deterministic: bool
    launches: int
    cusparse_format: str | None
    cusparse_alg: str | None
    _entry: dict[str, Any] = field(repr=False, hash=False, compare=False)
    #: The core's value (csrc/config.c, ``spmv_config``): registry index, the four parameter slots with
    #: defaults filled in, and the p_* design columns (NaN where the id names no such parameter).
    index: int = field(default=0, repr=False, hash=False, compare=False)
    slots: tuple[int, int, int, int] = field(default=(0, 0, 0, 0), repr=False, hash=False, compare=False)
    param_values: tuple[float, ...] = field(default=(), repr=False, hash=False, compare=False)

    @property
    def format_params(self) -> tuple[int, int]:
        """(param[0], param[1]) as the C core takes them, defaults filled in."""
        return self.slots[0], self.slots[1]

    @property
    def format_kwargs(self) -> dict[str, int]:
        """The format's parameters by name, defaults filled in, as :func:`pyspmv.convert` takes them."""
        return dict(zip(format_param_names(self.format), self.format_params))

    @property
    def launch(self) -> tuple[int, int]:
        """GPU thread mapping ``(tpv, bs)``: threads per row (``csr/adaptive``: entries a thread, its ``ept``) and
        threads per block, defaults filled in."""
        return self.slots[2], self.slots[3]

    @property
    def variant(self) -> int:
        """Kernel variant index: of the format's CPU kernels, or cuSPARSE's algorithm (0 for an own
        CUDA kernel, which its plan finds by :attr:`index`)."""
        return int(self._entry["kernel"])

    @property
    def kernel_id(self) -> str:
        """The registry's id of this configuration's kernel, without parameters
        (``pyspmv/csr/vector``; csrc/kernels.def)."""
        return str(self._entry["id"])

    def __str__(self) -> str:
        return self.id


@lru_cache(maxsize=1)
def _registry() -> tuple[dict[str, Any], ...]:
    return tuple(_core.kernels())


#: The libraries of configurations (:attr:`Config.library`, an id's first field), in registry order:
#: pyspmv's CPU kernels, its own CUDA kernels, cuSPARSE.
LIBRARIES: tuple[str, ...] = tuple(dict.fromkeys(e["prefix"] for e in _core.kernels()))


def device_libraries(device: str) -> tuple[str, ...]:
    """The libraries (:data:`LIBRARIES`) that have configurations on ``device``, in registry order."""
    return tuple(dict.fromkeys(e["prefix"] for e in _registry() if DEVICES[e["device"]] == device))


def _format_entry(fmt: str) -> dict[str, Any] | None:
    """The registry entry that defines format ``fmt``'s parameters: its first (the CPU kernel's)."""
    return next((e for e in _registry() if FORMATS[e["format"]] == fmt), None)


def format_param_names(fmt: str) -> tuple[str, ...]:
    """Parameter names of format ``fmt`` as ids and :func:`pyspmv.convert` spell them."""
    e = _format_entry(fmt)
    return tuple(n for n in e["param_names"][:2] if n) if e else ()


def format_param_defaults(fmt: str) -> dict[str, int]:
    """Default value of each parameter of format ``fmt``."""
    e = _format_entry(fmt)
    return {n: d for n, d in zip(e["param_names"][:2], e["param_default"][:2]) if n} if e else {}


def _make(t: tuple[Any, ...]) -> Config:
    """A Config from the core's tuple (``_core.config_parse``): index, slots, given bits, id, p columns."""
    index, slots, given, cid, p = t
    entry = _registry()[index]
    names = entry["param_names"]
    return Config(
        id=cid,
        library=entry["prefix"],
        format=FORMATS[entry["format"]],
        kernel=entry["name"],
        params={names[k]: slots[k] for k in range(len(names)) if names[k] and given >> k & 1},
        device=DEVICES[entry["device"]],
        deterministic=bool(entry["deterministic"]),
        launches=int(entry["launches"]),
        cusparse_format=entry["cusparse_format"],
        cusparse_alg=entry["cusparse_alg"],
        _entry=entry,
        index=index,
        slots=tuple(slots),
        param_values=tuple(p),
    )


def configs(device: str = "cpu") -> list[Config]:
    """Every configuration of ``device``: each registry kernel expanded over its parameter grid.

    Parameters
    ----------
    device : {'cpu', 'cuda'}

    Returns
    -------
    list of Config
        In registry order. ``configs('cuda')`` lists pyspmv's own CUDA kernels over their thread
        mappings and cuSPARSE's algorithms; listing needs no GPU, running them does.
    """
    validate("configs()", {"device": OneOf(DEVICES)}, locals())
    return [_make(t) for t in _expand(device)]


@lru_cache(maxsize=len(DEVICES))
def _expand(device: str) -> tuple[tuple[Any, ...], ...]:
    """The core's expansion of ``device`` (csrc/config.c, ``spmv_config_expand``)."""
    return tuple(_core.config_expand(DEVICES.index(device)))


def config(cfg: Config | str) -> Config:
    """Parse a configuration id (or pass a Config through).

    The C core parses it (csrc/config.c, ``spmv_config_parse``). An id is a registry kernel
    (``library/format[/kernel]``) followed by ``name=value`` parameters, each at most once.
    Parameters may be left out (they take the format's defaults). A value is ASCII decimal digits
    (``[0-9]+``; a leading ``-`` only for a parameter whose default is negative, such as HYB's
    ``k``) within int32, and where the registry has a grid for that parameter, one of the grid's
    values: the ids of :func:`configs`. The Config's :attr:`~Config.id` is the canonical id (its
    parameters in the registry's order).

    Raises
    ------
    ValueError
        An unknown id or parameter, a repeated parameter, a value that is not plain decimal digits,
        or a value outside the parameter's grid; the message names the id and what is allowed.
    TypeError
        ``cfg`` neither a Config nor a str.
    """
    if isinstance(cfg, Config):
        return cfg
    return _make(_core.config_parse(cfg))


def config_frame(cfgs: Iterable[Config | str], dtype: str | None = None) -> pd.DataFrame:
    """The configuration columns of pyspmv.datasets' X, one row per configuration in the order given
    (schema.md): ``config`` (the canonical id), ``library``, ``format``, ``kernel`` and the p_* columns
    as the core fills them (``spmv_config_columns``: NaN for a parameter the id does not name); with a
    ``dtype``, ``value_bytes`` and ``launches`` too."""
    import pandas as pd
    cs = [config(c) for c in cfgs]
    frame = pd.DataFrame({"config": [c.id for c in cs], "library": [c.library for c in cs],
                          "format": [c.format for c in cs], "kernel": [c.kernel or "" for c in cs]})
    names = PARAM_COLUMNS
    P = np.array([c.param_values for c in cs], np.float64).reshape(len(cs), len(names))
    for k, name in enumerate(names):
        frame[name] = P[:, k]
    if dtype is not None:
        frame["value_bytes"] = float(VALUE_BYTES[dtype])
        frame["launches"] = np.array([float(c.launches) for c in cs], np.float64)
    return frame
