"""The packaged defaults (``data/defaults.toml``), parsed once.

Every configuration default is read from that file: the config dataclasses and the
parts' own keyword defaults (``Fingerprinter(topic_threshold=...)``, ``MemoryStore(ann_above=...)``)
take their values from here, so a default is written in exactly one place. This module
imports nothing from the package, so any stage can read it without an import cycle.

    >>> DEFAULTS["top_k"], DEFAULTS["store"]["backend"]
    (8, 'memory')
    >>> section("lifecycle")["capacity"]
    100000
"""

from __future__ import annotations

import copy
import tomllib
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping


def packaged() -> dict[str, Any]:
    """A fresh, mutable parse of the packaged file (what ``load_config`` merges a user's file over)."""
    return copy.deepcopy(_PARSED)


def section(name: str) -> Mapping[str, Any]:
    """One table of the defaults, read-only; a missing table is a packaging bug and raises KeyError."""
    table: Mapping[str, Any] = DEFAULTS[name]
    return table


def _frozen(value: Any) -> Any:
    """Tables as read-only mappings and arrays as tuples, all the way down: the defaults are shared."""
    if isinstance(value, dict):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


_PARSED: dict[str, Any] = tomllib.loads(
    resources.files("smartcache").joinpath("data/defaults.toml").read_text(encoding="utf-8"))
# Every part reads this one object, so none may change it; load_config merges over packaged().
DEFAULTS: Mapping[str, Any] = _frozen(_PARSED)
