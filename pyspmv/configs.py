"""Configurations: a storage format, a kernel and its parameters, read from the C registry."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from . import _core

DEVICES = ("cpu", "cuda")
FORMATS: tuple[str, ...] = tuple(_core.format_names())


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
    """

    id: str
    library: str
    format: str
    kernel: str | None
    params: dict[str, int] = field(hash=False, compare=False)
    device: str
    deterministic: bool
    launches: int
    _entry: dict[str, Any] = field(repr=False, hash=False, compare=False)

    def _slot(self, k: int) -> int:
        name, default = self._entry["param_names"][k], self._entry["param_default"][k]
        return int(self.params.get(name, default)) if name else int(default)

    @property
    def format_params(self) -> tuple[int, int]:
        """(param[0], param[1]) as the C core takes them, defaults filled in."""
        return self._slot(0), self._slot(1)

    @property
    def format_kwargs(self) -> dict[str, int]:
        """The format's parameters by name, defaults filled in, as :func:`pyspmv.convert` takes them."""
        return dict(zip(format_param_names(self.format), self.format_params))

    @property
    def launch(self) -> tuple[int, int]:
        """GPU thread mapping ``(tpv, bs)``: threads per row and per block, defaults filled in."""
        return self._slot(2), self._slot(3)

    @property
    def variant(self) -> int:
        """Kernel variant index: of the format's CPU kernels, or cuSPARSE's algorithm (0 for an own
        CUDA kernel, which is found by :attr:`kernel_id`)."""
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


def _make(entry: dict[str, Any], params: dict[str, int]) -> Config:
    base = entry["id"]
    parts = base.split("/")
    cid = base + "".join(f"/{n}={params[n]}" for n in entry["param_names"] if n and n in params)
    return Config(
        id=cid,
        library=parts[0],
        format=FORMATS[entry["format"]],
        kernel=parts[2] if len(parts) > 2 else None,
        params=dict(params),
        device=DEVICES[entry["device"]],
        deterministic=bool(entry["deterministic"]),
        launches=int(entry["launches"]),
        _entry=entry,
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
    if device not in DEVICES:
        raise ValueError(f"The 'device' parameter of configs() must be one of {DEVICES}. Got {device!r} instead.")
    out = []
    for e in _registry():
        if DEVICES[e["device"]] != device:
            continue
        names = [n for n, g in zip(e["param_names"], e["grid"]) if n and g]
        grids = [g for n, g in zip(e["param_names"], e["grid"]) if n and g]
        for values in itertools.product(*grids):
            out.append(_make(e, dict(zip(names, values))))
    return out


def config(cfg: Config | str) -> Config:
    """Parse a configuration id (or pass a Config through).

    An id is a registry kernel (``library/format[/kernel]``) followed by ``name=value`` parameters,
    each at most once. Parameters may be left out (they take the format's defaults). A value is
    ASCII decimal digits (``[0-9]+``; a leading ``-`` only for a parameter whose default is
    negative, such as HYB's ``k``), and where the registry has a grid for that parameter, one of
    the grid's values: the ids of :func:`configs`.

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
    if not isinstance(cfg, str):
        raise TypeError(f"A configuration must be a Config or an id string. Got {type(cfg).__name__} instead.")
    parts = cfg.split("/")
    n = next((i for i, p in enumerate(parts) if "=" in p), len(parts))
    entry = next((e for e in _registry() if e["id"] == "/".join(parts[:n])), None)
    if entry is None:
        known = ", ".join(sorted({e["id"] for e in _registry()}))
        raise ValueError(f"Unknown configuration id {cfg!r}. Known kernels: {known}; list every id with "
                         "pyspmv.configs('cpu') or pyspmv.configs('cuda').")
    params: dict[str, int] = {}
    allowed = [n for n in entry["param_names"] if n]
    for item in parts[n:]:
        name, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"Configuration {cfg!r}: {item!r} follows the parameters; each must read name=value.")
        if name not in allowed:
            raise ValueError(f"Configuration {cfg!r}: '{name}' is not a parameter of {entry['id']}; it takes {allowed or 'none'}.")
        if name in params:
            raise ValueError(f"Configuration {cfg!r}: parameter '{name}' is given twice; give each at most once.")
        k = entry["param_names"].index(name)
        grid, signed = entry["grid"][k], entry["param_default"][k] < 0
        if not re.fullmatch(r"-?[0-9]+" if signed else r"[0-9]+", value):
            what = ("an integer (ASCII digits, optionally after '-')" if signed
                    else "a non-negative integer (ASCII digits)")
            raise ValueError(f"Configuration {cfg!r}: parameter '{name}' must be {what}. Got {value!r} instead.")
        params[name] = int(value)
        if grid and params[name] not in grid:
            raise ValueError(f"Configuration {cfg!r}: parameter '{name}' of {entry['id']} must be one of "
                             f"{', '.join(map(str, grid))}. Got {params[name]} instead.")
    return _make(entry, params)
