"""Configuration: frozen dataclasses, built from the packaged defaults plus an optional TOML file.

This is the one place where defaults live (``data/defaults.toml``, documented
field by field). ``load_config(path)`` merges a user's file over them.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from smartcache.context import ContextSettings
from smartcache.decide import ThresholdTable
from smartcache.errors import ConfigError


@dataclass(frozen=True)
class LifecycleConfig:
    promotion_window_s: float = 30.0
    default_ttl_s: float = 604800.0
    ttl_by_domain: Mapping[str, float] = field(default_factory=dict)
    capacity: int = 100_000
    feedback_floor: float = 0.5
    suspect_below: float = 0.8
    negative_penalty: float = 0.5
    validation_penalty: float = 0.25
    positive_bonus: float = 0.1
    hit_weight_s: float = 3600.0

    def ttl_for(self, domain: str) -> float:
        return float(self.ttl_by_domain.get(domain, self.default_ttl_s))


@dataclass(frozen=True)
class StoreConfig:
    backend: str = "memory"        # memory | sqlite | redis
    path: str = ""                 # sqlite: the database file
    url: str = ""                  # redis: redis://host:port/db (Redis Stack: RediSearch is required)
    prefix: str = "smartcache:"    # redis: key prefix, so several caches can share one server
    synchronous: str = "NORMAL"    # sqlite: NORMAL (process-crash safe) or FULL (power-loss safe)
    ann_above: int = 50_000        # a pool with more entries than this is searched by HNSW, not a scan

    def __post_init__(self) -> None:
        if self.backend not in ("memory", "sqlite", "redis"):
            raise ConfigError(f"unknown store backend {self.backend!r}: choose memory, sqlite or redis")
        if self.backend == "redis" and not self.url:
            raise ConfigError("the redis store needs a url ([store] url = \"redis://127.0.0.1:6379/0\")")
        if self.backend == "sqlite" and not self.path:
            raise ConfigError("the sqlite store needs a path ([store] path = ...)")
        if self.ann_above < 1:
            raise ConfigError("store.ann_above must be a positive number of entries")


@dataclass(frozen=True)
class AuthConfig:
    keys_file: str = ""              # the gateway's API keys (TOML, see gateway/auth.py); "" = no keys
    trust_tenant_header: bool = False   # honour x-tenant-id as sent (only behind an authenticating proxy)

    def __post_init__(self) -> None:
        # A quoted "false" would be truthy: this switch decides who reads whose answers.
        if not isinstance(self.trust_tenant_header, bool) or not isinstance(self.keys_file, str):
            raise ConfigError("auth.trust_tenant_header must be true or false, auth.keys_file a path string")


@dataclass(frozen=True)
class CacheConfig:
    encoder: str
    thresholds: Mapping[str, ThresholdTable]
    context: ContextSettings = field(default_factory=ContextSettings)
    lifecycle: LifecycleConfig = field(default_factory=LifecycleConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    auth: AuthConfig = field(default_factory=AuthConfig)
    disabled_domains: frozenset[str] = frozenset({"medical", "legal", "finance"})
    top_k: int = 8
    topic_threshold: float = 0.2
    memo_size: int = 50_000
    use_validation: bool = True   # key-fact validation of hits (off only for ablation)
    use_tags: bool = True         # tag rules: skeleton, actions, entities, nouns (off only for ablation)
    use_change_detection: bool = True   # negation, change flags, corrections, resets, topic switch
    use_context_view: bool = True       # score the history apart from the turn
    use_verifier: bool = True     # the learned verifier weighs the rules (off: every rule is a veto)
    verifier_path: str = ""       # a model file from `smartcache train`; "" = the packaged data/verifier.json

    def table_for(self, encoder: str) -> ThresholdTable:
        try:
            return self.thresholds[encoder]
        except KeyError:
            raise ConfigError(f"no thresholds for encoder {encoder!r}; add a [thresholds.{encoder}] table") from None


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), dict) else value
    return out


def _defaults() -> dict[str, Any]:
    text = resources.files("smartcache").joinpath("data/defaults.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def _build(data: Mapping[str, Any]) -> CacheConfig:
    known = {"encoder", "top_k", "topic_threshold", "memo_size", "disabled_domains", "context", "lifecycle", "store",
             "auth", "thresholds", "use_validation", "use_tags", "use_change_detection", "use_context_view",
             "use_verifier", "verifier_path"}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"unknown config keys: {sorted(unknown)}")
    try:
        tables = {name: ThresholdTable.from_mapping(t) for name, t in dict(data.get("thresholds", {})).items()}
        lifecycle = dict(data.get("lifecycle", {}))
        return CacheConfig(
            encoder=str(data["encoder"]),
            thresholds=tables,
            context=ContextSettings(**dict(data.get("context", {}))),
            lifecycle=LifecycleConfig(**lifecycle),
            store=StoreConfig(**dict(data.get("store", {}))),
            auth=AuthConfig(**dict(data.get("auth", {}))),
            disabled_domains=frozenset(data.get("disabled_domains", ())),
            top_k=int(data.get("top_k", 8)),
            topic_threshold=float(data.get("topic_threshold", 0.2)),
            memo_size=int(data.get("memo_size", 50_000)),
            use_validation=bool(data.get("use_validation", True)),
            use_tags=bool(data.get("use_tags", True)),
            use_change_detection=bool(data.get("use_change_detection", True)),
            use_context_view=bool(data.get("use_context_view", True)),
            use_verifier=bool(data.get("use_verifier", True)),
            verifier_path=str(data.get("verifier_path", "")),
        )
    except TypeError as exc:   # an unknown field inside a section
        raise ConfigError(f"invalid config: {exc}") from exc


def load_config(path: str | Path | None = None, **overrides: Any) -> CacheConfig:
    """The packaged defaults, with the TOML file at ``path`` and then ``overrides`` merged over them."""
    data = _defaults()
    if path is not None:
        try:
            data = _merge(data, tomllib.loads(Path(path).read_text(encoding="utf-8")))
        except OSError as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config {path} is not valid TOML: {exc}") from exc
    return _build(_merge(data, overrides))
