"""Configuration: frozen dataclasses, built from the packaged defaults plus an optional TOML file.

The one place where defaults live is ``data/defaults.toml`` (documented field by
field): the section dataclasses read their field defaults from it (through
``smartcache.defaults``), and ``load_config(path)`` merges a user's file over it.
``CacheConfig`` has no field defaults at all: it is only built from a full table.

    >>> cfg = load_config(top_k=4, lifecycle={"capacity": 10})
    >>> cfg.top_k, cfg.lifecycle.capacity, cfg.lifecycle.default_ttl_s
    (4, 10, 604800.0)
    >>> LifecycleConfig().ttl_for("travel") == cfg.lifecycle.ttl_for("travel") == 259200.0
    True
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from smartcache.context import ContextSettings
from smartcache.decide import ThresholdTable
from smartcache.defaults import packaged, section
from smartcache.errors import ConfigError
from smartcache.learn.policy import LearningConfig

# Field defaults below are read from the packaged file, never written here: a field the
# file lacks fails at import (and tests/test_config_cli.py checks every field).
_LIFE, _STORE, _AUTH = section("lifecycle"), section("store"), section("auth")


@dataclass(frozen=True)
class LifecycleConfig:
    promotion_window_s: float = _LIFE["promotion_window_s"]
    default_ttl_s: float = _LIFE["default_ttl_s"]
    ttl_by_domain: Mapping[str, float] = field(default_factory=lambda: dict(_LIFE["ttl_by_domain"]))
    capacity: int = _LIFE["capacity"]
    feedback_floor: float = _LIFE["feedback_floor"]
    suspect_below: float = _LIFE["suspect_below"]
    negative_penalty: float = _LIFE["negative_penalty"]
    validation_penalty: float = _LIFE["validation_penalty"]
    positive_bonus: float = _LIFE["positive_bonus"]
    hit_weight_s: float = _LIFE["hit_weight_s"]
    hit_flush_s: float = _LIFE["hit_flush_s"]

    def ttl_for(self, domain: str) -> float:
        return float(self.ttl_by_domain.get(domain, self.default_ttl_s))


@dataclass(frozen=True)
class StoreConfig:
    backend: str = _STORE["backend"]          # memory | sqlite | redis
    path: str = _STORE["path"]                # sqlite: the database file
    url: str = _STORE["url"]                  # redis: redis://host:port/db (Redis Stack: RediSearch is required)
    sentinels: tuple[str, ...] = tuple(_STORE["sentinels"])   # redis: HOST:PORT of each Sentinel (instead of url)
    service: str = _STORE["service"]          # redis: the primary's name the sentinels monitor (with sentinels)
    prefix: str = _STORE["prefix"]            # redis: key prefix, so several caches can share one server
    synchronous: str = _STORE["synchronous"]  # sqlite: NORMAL (process-crash safe) or FULL (power-loss safe)
    ann_above: int = _STORE["ann_above"]      # a pool with more entries than this is searched by HNSW, not a scan
    blas_threads: int = _STORE["blas_threads"]   # numpy's BLAS threads in the process (0: left alone)

    def __post_init__(self) -> None:
        if self.backend not in ("memory", "sqlite", "redis"):
            raise ConfigError(f"unknown store backend {self.backend!r}: choose memory, sqlite or redis")
        # "h1:26379,h2:26379" as the command line gives them, or a TOML list: one tuple of strings.
        items = self.sentinels.split(",") if isinstance(self.sentinels, str) else self.sentinels
        object.__setattr__(self, "sentinels", tuple(str(s).strip() for s in items if str(s).strip()))
        if self.backend == "redis" and not (self.url or self.sentinels):
            raise ConfigError("the redis store needs a url ([store] url = \"redis://127.0.0.1:6379/0\") "
                              "or sentinels ([store] sentinels = [\"HOST:PORT\", ...] and service)")
        if self.sentinels:
            from smartcache.store.redis_connect import parse_sentinels
            parse_sentinels(self.sentinels)      # a malformed HOST:PORT fails here, not at the first request
            if not self.service:
                raise ConfigError("[store] sentinels need the service name they monitor ([store] service)")
        if self.backend == "sqlite" and not self.path:
            raise ConfigError("the sqlite store needs a path ([store] path = ...)")
        if self.backend == "sqlite" and (self.path.strip() == ":memory:" or self.path.startswith("file:")):
            # Its lazy reads and its markers go through other connections to the same file: an
            # in-memory database would be another, empty one to each, and a URI no file name.
            raise ConfigError(f"the sqlite store needs a file path, not {self.path!r} "
                              "(for a store in this process's memory: [store] backend = \"memory\")")
        if self.ann_above < 1:
            raise ConfigError("store.ann_above must be a positive number of entries")
        if isinstance(self.blas_threads, bool) or not isinstance(self.blas_threads, int) or self.blas_threads < 0:
            raise ConfigError("store.blas_threads must be a non-negative number of threads (0: left alone)")


@dataclass(frozen=True)
class AuthConfig:
    keys_file: str = _AUTH["keys_file"]   # the gateway's API keys (TOML, see gateway/auth.py); "" = no keys
    trust_tenant_header: bool = _AUTH["trust_tenant_header"]   # honour x-tenant-id as sent (behind an authenticating proxy only)
    admin_token_file: str = _AUTH["admin_token_file"]   # a file holding serve's admin token; "" = none

    def __post_init__(self) -> None:
        # A quoted "false" would be truthy: this switch decides who reads whose answers.
        if (not isinstance(self.trust_tenant_header, bool) or not isinstance(self.keys_file, str)
                or not isinstance(self.admin_token_file, str)):
            raise ConfigError("auth.trust_tenant_header must be true or false, auth.keys_file and "
                              "auth.admin_token_file path strings")


@dataclass(frozen=True)
class CacheConfig:
    """The whole configuration. No field defaults: ``load_config`` builds it from the packaged table."""

    encoder: str
    thresholds: Mapping[str, ThresholdTable]
    context: ContextSettings
    lifecycle: LifecycleConfig
    store: StoreConfig
    auth: AuthConfig
    learning: LearningConfig
    disabled_domains: frozenset[str]   # never served from cache, never stored
    repeat_only_domains: frozenset[str]   # served only as a repeat (the exact and near-exact paths): high-risk
    top_k: int
    topic_threshold: float
    memo_size: int
    exact_path: bool          # word-for-word repeats found by their key, before any model runs
    use_validation: bool      # key-fact validation of hits (off only for ablation)
    use_tags: bool            # tag rules: skeleton, actions, entities, nouns (off only for ablation)
    use_change_detection: bool   # negation, change flags, corrections, resets, topic switch
    use_context_view: bool       # score the history apart from the turn
    use_verifier: bool        # the learned verifier weighs the rules (off: every rule is a veto)
    verifier_path: str        # a model file from `smartcache train`; "" = the packaged data/verifier.json

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


# Keys of removed features: a file that still sets one is told why it no longer means anything.
_REMOVED = {"use_cross_encoder", "cross_encoder_path", "cross_verifier_path"}


def _build(data: Mapping[str, Any]) -> CacheConfig:
    unknown = set(data) - {f.name for f in fields(CacheConfig)}
    if unknown & _REMOVED:
        others = f"; unknown config keys: {sorted(unknown - _REMOVED)}" if unknown - _REMOVED else ""
        raise ConfigError(f"{sorted(unknown & _REMOVED)}: the cross-encoder was removed (on the development streams "
                          "it served nothing more where it had not seen the source, and more wrong answers where it "
                          f"had: docs/eval/cross-encoder.md); delete these keys{others}")
    if unknown:
        raise ConfigError(f"unknown config keys: {sorted(unknown)}")
    # No fallbacks: ``data`` always holds the packaged file, so a KeyError here is a packaging bug.
    try:
        return CacheConfig(
            encoder=str(data["encoder"]),
            thresholds={name: ThresholdTable.from_mapping(t) for name, t in dict(data["thresholds"]).items()},
            context=ContextSettings(**dict(data["context"])),
            lifecycle=LifecycleConfig(**dict(data["lifecycle"])),
            store=StoreConfig(**dict(data["store"])),
            auth=AuthConfig(**dict(data["auth"])),
            learning=_learning(data["learning"]),
            disabled_domains=frozenset(data["disabled_domains"]),
            repeat_only_domains=frozenset(data["repeat_only_domains"]),
            top_k=int(data["top_k"]),
            topic_threshold=float(data["topic_threshold"]),
            memo_size=int(data["memo_size"]),
            exact_path=bool(data["exact_path"]),
            use_validation=bool(data["use_validation"]),
            use_tags=bool(data["use_tags"]),
            use_change_detection=bool(data["use_change_detection"]),
            use_context_view=bool(data["use_context_view"]),
            use_verifier=bool(data["use_verifier"]),
            verifier_path=str(data["verifier_path"]),
        )
    except TypeError as exc:   # an unknown field inside a section
        raise ConfigError(f"invalid config: {exc}") from exc


def _learning(table: Mapping[str, Any]) -> LearningConfig:
    try:
        return LearningConfig(**dict(table))
    except (TypeError, ValueError) as exc:     # an unknown field, a value of the wrong type or range
        raise ConfigError(f"invalid [learning]: {exc}") from exc


def load_config(path: str | Path | None = None, **overrides: Any) -> CacheConfig:
    """The packaged defaults, with the TOML file at ``path`` and then ``overrides`` merged over them."""
    data = packaged()
    if path is not None:
        try:
            data = _merge(data, tomllib.loads(Path(path).read_text(encoding="utf-8")))
        except OSError as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config {path} is not valid TOML: {exc}") from exc
    return _build(_merge(data, overrides))
