"""Zone thresholds per encoder, risk tier and intent domain.

A cosine means different things under different encoders (unrelated USE pairs
sit near 0.15, unrelated e5 pairs near 0.75), so every encoder has its own
table. Within a table: a domain override wins over its risk tier's, which wins
over the default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from smartcache.errors import ConfigError


@dataclass(frozen=True)
class Thresholds:
    """``same``: the verifier's P(same) needed to serve (calibrated to a false-hit budget);
    ``half_hit``: the turn-cosine floor below which a candidate is not even weighed.
    Without a verifier (the rules-only baseline): hit ≥ ``hit`` > half-hit ≥ ``half_hit``
    > miss on the turn cosine, and ``context`` is the context cosine needed when two
    histories are not byte-identical."""

    hit: float
    half_hit: float
    context: float
    same: float | None = None     # None: the operating point calibrated into the verifier model

    def __post_init__(self) -> None:
        for name in ("hit", "half_hit", "context", "same"):
            value = getattr(self, name)
            if name == "same" and value is None:
                continue
            if not isinstance(value, (int, float)) or not -1.0 <= value <= 1.0:
                raise ConfigError(f"threshold {name} must be a number in [-1, 1], got {value!r}")
        if self.half_hit > self.hit:
            raise ConfigError(f"half_hit ({self.half_hit}) must not exceed hit ({self.hit})")

    def merged(self, changes: Mapping[str, float]) -> "Thresholds":
        unknown = set(changes) - {"hit", "half_hit", "context", "same"}
        if unknown:
            raise ConfigError(f"unknown threshold fields {sorted(unknown)}")
        return Thresholds(**{**self.__dict__, **changes})


@dataclass(frozen=True)
class ThresholdTable:
    default: Thresholds
    by_tier: Mapping[str, Thresholds] = field(default_factory=dict)
    by_domain: Mapping[str, Thresholds] = field(default_factory=dict)

    def for_domain(self, domain: str, tier: str) -> Thresholds:
        if domain in self.by_domain:
            return self.by_domain[domain]
        return self.by_tier.get(tier, self.default)

    @classmethod
    def from_mapping(cls, data: Mapping[str, object], base: "ThresholdTable | None" = None) -> "ThresholdTable":
        """Build from the ``[thresholds.<encoder>]`` table of a config file, over ``base``."""
        if not isinstance(data, Mapping):
            raise ConfigError("a thresholds table must be a table")
        default = base.default if base else None
        if "default" in data:
            default = default.merged(data["default"]) if default else Thresholds(**data["default"])  # type: ignore[arg-type]
        if default is None:
            raise ConfigError("a thresholds table needs a [default] section")
        tiers = dict(base.by_tier) if base else {}
        for tier, values in dict(data.get("tier", {})).items():  # type: ignore[arg-type]
            tiers[tier] = tiers.get(tier, default).merged(values)
        domains = dict(base.by_domain) if base else {}
        for domain, values in dict(data.get("domain", {})).items():  # type: ignore[arg-type]
            domains[domain] = domains.get(domain, default).merged(values)
        return cls(default=default, by_tier=tiers, by_domain=domains)
