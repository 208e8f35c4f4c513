"""vCache as a stream baseline (``smartcache replay --systems vcache@0.01``).

vCache (Schroeder et al., "vCache: Verified Semantic Prompt Caching", arXiv:2502.03771, ICLR 2026)
learns, for every cached prompt y, how the correctness of serving y's answer depends on the
similarity s of a new prompt to y, and serves only where a user-set error rate δ holds. Written
from the paper's method section (Section 4, Algorithm 1) as summarised in public notes; the full
paper text and vCache's code were not read (its licence forbids copying). The policy:

- every entry y keeps its observations O(y) = {(s, c)}: the similarity of each later prompt whose
  nearest neighbour was y, and whether y's answer equalled the engine's answer to it;
- P(c = 1 | s) is modelled by a sigmoid L(s, t, γ) = 1 / (1 + exp(-γ (s - t))), with (t̂, γ̂) the
  maximum-likelihood fit to O(y) (binary cross-entropy);
- the exploration probability that keeps Pr(correct) ≥ 1 - δ, with p the probability that y's
  answer is right, is τ = ((1 - δ) - p) / (1 - p): exploring is always right, exploiting is
  right with probability p;
- p is replaced by a pessimistic value from the fit's (1 - ε) confidence region, and the
  tightest ε taken: τ̂ = min over ε of ((1 - δ) - (1 - ε) L') / (1 - (1 - ε) L'), with
  L' = L(s, t'(ε), γ'(ε));
- draw u ~ U(0, 1): u < τ̂ explores (the engine answers, (s, c) joins O(y) and the prompt becomes
  an entry of its own), otherwise y's answer is served.

Choices of this implementation where the summary gave no detail (each a constant or a setting):

- the confidence region is the profile likelihood's: for each boundary t on a grid, γ(t) is the
  slope that fits O(y) best, and (t, γ(t)) is in the one-sided (1 - ε) region when twice its
  log-likelihood gap to the MLE is at most z(1 - ε)²; L' is the least L(s, t, γ(t)) over the
  region. A Wald interval (standard errors from the Fisher information) was tried first and
  dropped: the observations are usually separable (every right one more similar than every wrong
  one), where the MLE's slope runs off and the Wald interval with it, so 50 right observations at
  s = 1 still left τ̂ = 0.65 at δ = 0.05; the profile bound behaves like a binomial one (see
  ``test_profile_bound_grows_with_evidence``);
- γ is kept in [0, ``GAMMA_MAX``] (a boundary steeper than the grid's step would hide between two
  grid points) and t on a grid of step 0.0025 over [0, 1] (coarser below);
- an entry with fewer than ``min_observations`` observations is always explored (the formula
  alone would serve it with probability δ, blind);
- ε runs over a fixed grid from 1e-6 to 0.99.

Worked example (δ = 0.05): an entry whose observations are k right answers at s = 1 and three
wrong ones at s ≤ 0.8 explores an exact repeat with τ̂ ≈ 0.79 at k = 3, 0.58 at k = 12, 0.22 at
k = 30 and 0 from about k = 50: per-entry evidence is what it waits for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from smartcache.context import normalize_text, parse_messages
from smartcache.eval.streams import Served, StreamRequest

# ε in (0, 1): dense near 0, where small δ needs it (τ̂ < 1 needs (1 - ε) L > 0 and τ̂ = 0 needs
# ε ≤ δ), coarse above; its quantiles are computed once, not per request.
EPSILONS = np.concatenate([np.geomspace(1e-6, 0.1, 61)[:-1], np.linspace(0.1, 0.99, 90)])


# candidate boundaries t: step 0.0025 over [0, 1], where similarities of neighbours lie, and coarse
# below (a boundary under 0 only says "right at every similarity seen")
T_GRID = np.concatenate([np.linspace(-1.0, -0.05, 20), np.linspace(0.0, 1.0, 401)])
GAMMA_MAX = 200.0                          # steepest slope: 1 / GAMMA_MAX = 0.005, twice the grid's step


class Profile(NamedTuple):
    """One entry's fit: for every boundary in ``T_GRID`` the best slope, and twice the
    log-likelihood gap of that (t, γ) to the MLE (0 at the MLE)."""

    gammas: np.ndarray
    gaps: np.ndarray

    @property
    def mle(self) -> tuple[float, float]:
        best = int(np.argmin(self.gaps))
        return float(T_GRID[best]), float(self.gammas[best])


def fit_profile(s: np.ndarray, c: np.ndarray, w: np.ndarray | None = None, *, start: np.ndarray | None = None,
                steps: int = 30) -> Profile:
    """Fit P(c = 1 | s) = 1 / (1 + exp(-γ (s - t))) by maximum likelihood with γ profiled out:
    Newton's method on γ for every t of ``T_GRID`` at once (one (len(T_GRID), n) array per step, no
    Python loop over t), γ kept in [0, GAMMA_MAX]. ``w``: how many times each (s, c) was observed;
    ``start``: the slopes of the entry's previous fit (one more observation moves them little, so
    Newton needs a step or two instead of ten).

        >>> fit = fit_profile(np.array([0.95, 0.96, 0.94, 0.80, 0.79, 0.81]), np.array([1, 1, 1, 0, 0, 0]))
        >>> t, gamma = fit.mle
        >>> 0.81 <= t <= 0.94, gamma == GAMMA_MAX      # separable: any boundary between, as steep as allowed
        (True, True)
    """
    x = s.astype(float)[None, :] - T_GRID[:, None]
    y = c.astype(float)[None, :]
    weight = np.ones_like(y) if w is None else w.astype(float)[None, :]
    gammas = np.full(len(T_GRID), 10.0) if start is None else start.copy()
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(gammas[:, None] * x, -60.0, 60.0)))
        step = (weight * (y - p) * x).sum(1) / ((weight * p * (1.0 - p) * x * x).sum(1) + 1e-9)
        new = np.clip(gammas + step, 0.0, GAMMA_MAX)
        if float(np.abs(new - gammas).max()) < 1e-6:
            gammas = new
            break
        gammas = new
    eta = gammas[:, None] * x
    loglik = -(weight * (y * np.logaddexp(0.0, -eta) + (1.0 - y) * np.logaddexp(0.0, eta))).sum(1)
    return Profile(gammas, 2.0 * (loglik.max() - loglik))


def explore_probability(s: float, fit: Profile, delta: float, eps: np.ndarray, z: np.ndarray) -> float:
    """τ̂ = min over ε of ((1 - δ) - (1 - ε) L') / (1 - (1 - ε) L'), L' the least L(s, t, γ(t)) over
    the (1 - ε) region (gap ≤ max(z, 0)², z = Φ⁻¹(1 - ε) given beside ``eps``); clipped to [0, 1].
    One (ε, t) array: no loop.

        >>> eps, z = np.array([0.01, 0.5]), np.array([2.326, 0.0])
        >>> fit = fit_profile(np.array([1.0] * 60 + [0.5, 0.4]), np.array([1] * 60 + [0, 0]))
        >>> explore_probability(1.0, fit, 0.05, eps, z)       # 60 right at s = 1: serve
        0.0
        >>> round(explore_probability(0.6, fit, 0.05, eps, z), 2)   # between the two: explore
        0.95
    """
    sig = 1.0 / (1.0 + np.exp(-np.clip(fit.gammas * (s - T_GRID), -60.0, 60.0)))
    inside = fit.gaps[None, :] <= (np.maximum(z, 0.0) ** 2)[:, None]
    q = (1.0 - eps) * np.where(inside, sig[None, :], np.inf).min(1)
    return float(np.clip((((1.0 - delta) - q) / (1.0 - q)).min(), 0.0, 1.0))


@dataclass
class _Entry:
    answer: str
    key: str                       # the scorer's answer_key: fills Served.served_key, never decides
    sims: list[float] = field(default_factory=list)
    correct: list[bool] = field(default_factory=list)
    fit: Profile | None = None
    fitted_at: int = -1            # len(sims) when ``fit`` was computed: refit only on new evidence


class _Pool:
    """One tenant's entries: a growing matrix of unit vectors (doubled when full, so a request
    costs one matrix-vector product and no re-stacking) and the entries beside it."""

    def __init__(self, dim: int) -> None:
        self.vectors = np.zeros((64, dim), np.float32)
        self.entries: list[_Entry] = []

    def nearest(self, q: np.ndarray) -> tuple[int, float]:
        # einsum, not BLAS: on a few cores a threaded matrix-vector product fights the encoder's
        # runtime threads for the CPU (measured 15 ms against 1.3 ms at 3,000 entries x 512)
        scores = np.einsum("ij,j->i", self.vectors[: len(self.entries)], q)
        best = int(np.argmax(scores))       # ties go to the oldest entry, the one with most evidence
        return best, float(scores[best])

    def add(self, q: np.ndarray, entry: _Entry) -> None:
        n = len(self.entries)
        if n == len(self.vectors):
            self.vectors = np.concatenate([self.vectors, np.zeros_like(self.vectors)])
        self.vectors[n] = q
        self.entries.append(entry)


class VCacheStream:
    """vCache's decision policy over a stream (``StreamSystem``): the last user message's vector,
    one pool per tenant, the nearest entry's learned sigmoid and δ decide exploit or explore.

    The engine is an oracle here, as in vCache's benchmarks: correctness of an observation is
    exact equality of the engine's ``answer`` texts. ``answer_key`` is never read for a decision."""

    def __init__(self, encoder: Any, delta: float, *, seed: int = 0, min_observations: int = 3) -> None:
        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta must be in (0, 1), not {delta!r}")
        if min_observations < 1:
            raise ValueError(f"min_observations must be at least 1, not {min_observations!r}")
        from scipy.stats import norm

        self.encoder, self.delta, self.min_observations = encoder, delta, min_observations
        self.name = f"vcache@{delta:g}"
        self.settings: dict[str, Any] = {"delta": delta, "seed": seed, "min_observations": min_observations,
                                         "gamma_max": GAMMA_MAX, "epsilons": len(EPSILONS)}
        self._z = norm.ppf(1.0 - EPSILONS)
        self._rng = np.random.default_rng(seed)
        self._pools: dict[str, _Pool] = {}

    def _tau(self, entry: _Entry, s: float) -> tuple[float, str]:
        """The exploration probability for ``entry`` at similarity ``s``, and why."""
        if len(entry.sims) < self.min_observations:
            return 1.0, "cold"
        if entry.fitted_at != len(entry.sims):
            # identical observations (s to 0.001, a quarter of the grid's step) are fitted once, weighted
            pairs, counts = np.unique(np.column_stack([np.round(entry.sims, 3), entry.correct]), axis=0,
                                      return_counts=True)
            entry.fit = fit_profile(pairs[:, 0], pairs[:, 1], counts,
                                    start=None if entry.fit is None else entry.fit.gammas)
            entry.fitted_at = len(entry.sims)
        return explore_probability(s, entry.fit, self.delta, EPSILONS, self._z), "fit"

    def handle(self, request: StreamRequest) -> Served:
        text = normalize_text(parse_messages(request.messages).current)
        q = np.asarray(self.encoder.encode([text])[0], np.float32)
        pool = self._pools.get(request.tenant)
        if pool is None:
            pool = self._pools[request.tenant] = _Pool(len(q))
        if not pool.entries:
            pool.add(q, _Entry(request.answer, request.answer_key))
            return Served(False, reason="vcache:empty")
        index, s = pool.nearest(q)
        nearest = pool.entries[index]
        tau, why = self._tau(nearest, s)
        detail = f"s={s:.3f} n={len(nearest.sims)} tau={tau:.3f}"
        if self._rng.random() >= tau:       # u ~ U[0, 1); tau = 0 always exploits, tau = 1 never
            return Served(True, nearest.key, f"vcache:exploit {detail}")
        # explore: the engine answers this request; what it says is the observation for the entry
        nearest.sims.append(s)
        nearest.correct.append(request.answer == nearest.answer)
        pool.add(q, _Entry(request.answer, request.answer_key))
        return Served(False, reason=f"vcache:explore-{why} {detail}")


__all__ = ["EPSILONS", "GAMMA_MAX", "Profile", "T_GRID", "VCacheStream", "explore_probability", "fit_profile"]
