"""Training the verifier: harvest evidence through the real pipeline, fit, hold sources out, calibrate.

    cases (one file per source)  --harvest-->  features of every candidate that no hard veto
    settled, labelled same / modify / different  --fit-->  gradient-boosted trees

Every candidate is found and described exactly as a lookup finds and describes it
(the same fingerprint, store search, floor and vetoes), so the model is trained on
the distribution it is used on.

Held-out figures come from whole source *families* left out (all of PAWS-X and its
placements in context, all of ATEC, all generator domains …): each family's
predictions are made by a model that never saw it. The operating point, the P(same)
a hit needs, is chosen on those predictions, per risk tier, as the lowest threshold
whose one-sided 95 % Clopper-Pearson upper bound on the false-hit rate stays within
the budget (vCache's idea of a user-set error bound δ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from smartcache.decide.decider import tier_of
from smartcache.decide.evidence import FEATURES
from smartcache.decide.verifier import DIFFERENT, MODIFY, SAME, TreeVerifier
from smartcache.eval.cases import Case, load_cases
from smartcache.store import SearchFilter

LABEL = {"hit": SAME, "half_hit": MODIFY, "miss": DIFFERENT}


def family_of(source: str) -> str:
    """'lcqmc-ctx' -> 'lcqmc', 'gen-travel' -> 'gen', 'gptcache' -> 'qqp' (both English pairs)."""
    head = source.split("-")[0]
    return "qqp" if head == "gptcache" else head


@dataclass
class Harvest:
    """One row per weighed candidate; case-level columns repeat per row."""

    x: list[np.ndarray] = field(default_factory=list)
    y: list[int] = field(default_factory=list)
    case: list[int] = field(default_factory=list)      # index into ``cases``
    target: list[bool] = field(default_factory=list)   # the entry a hit must serve
    cases: list[dict[str, Any]] = field(default_factory=list)   # id, source, lang, category, expect, tier
    vetoes: dict[str, list[int]] = field(default_factory=dict)   # code -> [on wanted hits, on the rest]
    # Each row's two current turns as the fingerprint read them (probe, cached): for signals
    # read beside the evidence (scripts/verifier_signals.py: another encoder's cosine).
    texts: list[tuple[str, str]] = field(default_factory=list)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        x = np.stack(self.x) if self.x else np.zeros((0, len(FEATURES)), np.float32)
        return x, np.asarray(self.y, np.int8), np.asarray(self.case, np.int32), np.asarray(self.target, bool)

    def save(self, path: Path, stamp: str = "") -> None:
        import json
        x, y, case, target = self.arrays()
        np.savez_compressed(path, x=x, y=y, case=case, target=target,
                            cases=np.asarray(json.dumps(self.cases, ensure_ascii=False)),
                            vetoes=np.asarray(json.dumps(self.vetoes)), features=np.asarray(FEATURES),
                            texts=np.asarray(json.dumps(self.texts, ensure_ascii=False)), stamp=np.asarray(stamp))

    @classmethod
    def load(cls, path: Path, stamp: str | None = None) -> "Harvest":
        """``stamp``: refuse a harvest made by other code (``code_stamp()``)."""
        import json
        data = np.load(path, allow_pickle=False)
        if tuple(data["features"].tolist()) != FEATURES:
            raise ValueError("harvested with other features")
        if stamp is not None and str(data["stamp"]) != stamp:
            raise ValueError("harvested by other code")
        h = cls()
        h.x = list(data["x"])
        h.y, h.case, h.target = data["y"].tolist(), data["case"].tolist(), data["target"].tolist()
        h.cases = json.loads(str(data["cases"]))
        h.vetoes = json.loads(str(data["vetoes"]))
        if "texts" in data.files:
            h.texts = [tuple(t) for t in json.loads(str(data["texts"]))]
        elif "sides" in data.files:     # harvested when rows kept a cross-encoder's input: (turn, its dependency) a side
            h.texts = [(t[0], t[2]) for t in json.loads(str(data["sides"]))]
        else:
            raise ValueError("harvested before rows kept their turns; harvest again")
        if len(h.texts) != len(h.y):
            raise ValueError(f"{len(h.texts)} rows of turns for {len(h.y)} rows; harvest again")
        return h


def code_stamp() -> str:
    """sha256 of the stages that shape a candidate's evidence: a harvest is reused only by
    the code that made it."""
    import hashlib

    import smartcache
    root = Path(smartcache.__file__).parent
    digest = hashlib.sha256()
    for part in ("context", "fingerprint", "decide", "data/lexicon"):
        for path in sorted((root / part).rglob("*")):
            if path.suffix in (".py", ".toml"):
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def harvest(cases: Sequence[Case], source: str, cache, out: Harvest | None = None,
            progress: Callable[[], None] | None = None) -> Harvest:
    """Describe every candidate of every case the way a lookup would, with its label.

    ``cache``: a SmartCache without a verifier, on a memory store; each case gets a tenant
    of its own, so cases never see each other's entries."""
    out = out or Harvest()
    decider = cache.decider
    for case in cases:
        tenant = f"train-{source}-{case.id}"
        ids = []
        for item in case.cached:
            stored = cache.store(item.messages, item.answer, session=case.session, tenant=tenant,
                                 versions=item.versions or case.versions, scope=case.scope)
            ids.append(stored.cache_id)
            if stored.stored:
                cache.promote(stored.cache_id, to_global=case.scope == "global")
        fp, version = cache.fingerprint(case.probe, versions=case.probe_versions)
        index = len(out.cases)
        domain = fp.signature.domain
        out.cases.append({"id": case.id, "source": source, "lang": case.lang, "category": case.category,
                          "expect": case.expect, "tier": tier_of(domain), "domain": domain,
                          "context": bool(fp.signature.has_context)})
        if progress:
            progress()
        if decider.gate(fp) is not None:
            continue
        flt = SearchFilter(tenant=tenant, version_key=version.digest(), session_id=case.probe_session,
                           domain=domain, now=cache.clock(), feedback_floor=cache.config.lifecycle.feedback_floor)
        candidates = cache.backend.search(flt, fp.turn_vector, cache.config.top_k)
        if fp.topic_switch:
            candidates = [c for c in candidates if c.entry.scope.value == "global"]
        limits = decider.table.for_domain(domain, tier_of(domain))
        target_id = ids[case.expect_index] if case.expect in ("hit", "half_hit") and ids else None
        for e in decider.evidence(fp, candidates, limits)[0]:
            is_target = e.entry.cache_id == target_id
            label = LABEL[case.expect] if is_target else DIFFERENT
            if e.veto is not None:
                out.vetoes.setdefault(e.veto.code, [0, 0])[0 if label == SAME else 1] += 1
                continue
            out.x.append(e.features)
            out.y.append(label)
            out.case.append(index)
            out.target.append(is_target)
            out.texts.append((fp.signature.text, e.entry.signature.text))
    return out


def harvest_pool(requests: Sequence[dict[str, Any]], source: str, cache, out: Harvest | None = None,
                 progress: Callable[[], None] | None = None) -> Harvest:
    """Describe every candidate of a pool of traffic the way a lookup would: one row per
    candidate among every answer stored before it, so a request competes with thousands of
    entries as it does in a real cache, and the best of k is what calibration judges.

    ``requests``: STREAMS.md objects in arrival order (``messages``, ``answer_key``, optional
    ``tenant`` / ``session`` / ``scope`` / ``lang`` / ``category``). A row is ``same`` when the
    candidate was stored from a request with the same ``answer_key``; a request is an
    expected hit when its key was stored before it. Every request's answer is then stored
    and promoted at once (the harvest serves nothing, so the pool holds all earlier traffic)."""
    out = out or Harvest()
    decider = cache.decider
    key_of: dict[str, str] = {}           # entry id -> the answer_key it was stored from
    seen: set[tuple[str, str]] = set()    # (tenant, key) stored so far
    for n, request in enumerate(requests):
        tenant = f"pool-{source}-{request.get('tenant', 'default')}"
        session = str(request.get("session") or request["id"])
        key = str(request["answer_key"])
        looked = cache.prepare(request["messages"], session=session, tenant=tenant)
        fp = looked.fingerprint
        index = len(out.cases)
        domain = fp.signature.domain
        out.cases.append({"id": str(request["id"]), "source": source, "lang": request.get("lang", ""),
                          "category": request.get("category", ""),
                          "expect": "hit" if (tenant, key) in seen else "miss", "tier": tier_of(domain),
                          "domain": domain, "context": bool(fp.signature.has_context)})
        if progress:
            progress()
        if looked.gate is None:
            flt = SearchFilter(tenant=tenant, version_key=looked.version.digest(), session_id=session,
                               domain=domain, now=cache.clock(),
                               feedback_floor=cache.config.lifecycle.feedback_floor)
            candidates = cache.backend.search(flt, fp.turn_vector, cache.config.top_k)
            if fp.topic_switch:
                candidates = [c for c in candidates if c.entry.scope.value == "global"]
            limits = decider.table.for_domain(domain, tier_of(domain))
            for e in decider.evidence(fp, candidates, limits)[0]:
                same = key_of.get(e.entry.cache_id) == key
                if e.veto is not None:
                    out.vetoes.setdefault(e.veto.code, [0, 0])[0 if same else 1] += 1
                    continue
                out.x.append(e.features)
                out.y.append(SAME if same else DIFFERENT)
                out.case.append(index)
                out.target.append(same)
                out.texts.append((fp.signature.text, e.entry.signature.text))
        scope = str(request.get("scope") or "session")
        stored = cache.store(looked, str(request.get("answer") or f"(answer {key})"), scope=scope)
        if stored.stored:
            cache.promote(stored.cache_id, to_global=scope == "global")
            key_of[stored.cache_id] = key
            seen.add((tenant, key))
    return out


def load_pool(path: Path) -> list[dict[str, Any]]:
    """The requests of a pool file (STREAMS.md lines), in the order they arrive."""
    import json
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# A file of the training folder holding a pool of traffic rather than cases.
POOL_SUFFIX = ".pool.jsonl"

_MAKE_CACHE = None   # set before the worker processes fork; each builds its own cache


def _harvest_file(path: Path) -> Harvest:
    """One source file's harvest, kept beside it (``<source>.harvest.npz``) and reused while
    the file and the code are unchanged."""
    saved, stamp = path.with_name(path.name[:-len(".jsonl")] + ".harvest.npz"), code_stamp()
    if saved.exists() and saved.stat().st_mtime >= path.stat().st_mtime:
        try:
            return Harvest.load(saved, stamp)
        except ValueError:
            pass
    if path.name.endswith(POOL_SUFFIX):
        part = harvest_pool(load_pool(path), path.name[:-len(POOL_SUFFIX)] + "-pool", _MAKE_CACHE())
    else:
        part = harvest(load_cases(path), path.stem, _MAKE_CACHE())
    part.save(saved, stamp)
    return part


def merge(parts: Sequence[Harvest]) -> Harvest:
    out = Harvest()
    for part in parts:
        offset = len(out.cases)
        out.x += part.x
        out.y += part.y
        out.case += [c + offset for c in part.case]
        out.target += part.target
        out.texts += part.texts
        out.cases += part.cases
        for code, (pos, neg) in part.vetoes.items():
            counts = out.vetoes.setdefault(code, [0, 0])
            counts[0] += pos
            counts[1] += neg
    return out


def harvest_dir(folder: Path, make_cache, *, workers: int = 2, say: Callable[[str], None] = print) -> Harvest:
    """Every ``*.jsonl`` of a folder, one source a file, in ``workers`` processes (the
    encoder and the rules are CPU-bound; one process a core)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _MAKE_CACHE
    _MAKE_CACHE = make_cache
    paths = sorted(folder.glob("*.jsonl"), key=lambda p: -p.stat().st_size)   # largest first: even finish
    if workers <= 1:
        return merge([_harvest_file(p) for p in paths])
    parts: dict[Path, Harvest] = {}
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        for path, part in zip(paths, pool.map(_harvest_file, paths)):
            parts[path] = part
            say(f"  harvested {path.name}: {len(part.cases)} cases, {len(part.y)} rows")
    return merge([parts[p] for p in sorted(parts)])


# -- fitting --------------------------------------------------------------------------------

PARAMS = dict(max_iter=150, learning_rate=0.1, max_leaf_nodes=24, max_depth=6, min_samples_leaf=30,
              l2_regularization=1.0, early_stopping=False)


def fit(x: np.ndarray, y: np.ndarray, weights: np.ndarray, seed: int = 0, params: dict[str, Any] | None = None):
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(random_state=seed, **{**PARAMS, **(params or {})})
    # Every class must exist for a 3-class export; a family without modify examples still trains.
    missing = [c for c in (SAME, MODIFY, DIFFERENT) if c not in set(y.tolist())]
    if missing:
        x = np.concatenate([x, np.zeros((len(missing), x.shape[1]), x.dtype)])
        y = np.concatenate([y, np.asarray(missing, y.dtype)])
        weights = np.concatenate([weights, np.full(len(missing), 1e-6)])
    return model.fit(x, y, sample_weight=weights)


def family_weights(families: np.ndarray) -> np.ndarray:
    """Each family weighs by the square root of its size, so QQP's thousands do not drown
    PAWS-X's hundreds, nor do small families count as much as large ones."""
    names, counts = np.unique(families, return_counts=True)
    per = {n: 1.0 / math.sqrt(c) for n, c in zip(names, counts)}
    w = np.asarray([per[f] for f in families])
    return w * len(w) / w.sum()


def row_weights(families: np.ndarray, case: np.ndarray) -> np.ndarray:
    """``family_weights``, with every case (a request) counting once however many candidates
    it has: a request of a pool of traffic weighs up to four rows (``WEIGHED``), a pair case
    one, and without this the pools' many distractors would drown the rest.

        >>> [round(float(w), 3) for w in row_weights(np.asarray(["a", "a", "a"]), np.asarray([0, 0, 1]))]
        [0.75, 0.75, 1.5]
    """
    _, index, counts = np.unique(case, return_inverse=True, return_counts=True)
    per_case = 1.0 / counts[index]
    w = family_weights(families) * per_case
    return w * len(w) / w.sum()


def held_out_predictions(h: Harvest, seed: int = 0, progress: Callable[[str], None] | None = None,
                         params: dict[str, Any] | None = None) -> np.ndarray:
    """P(class) of every row from a model trained without the row's source family."""
    x, y, case, _ = h.arrays()
    fam = np.asarray([family_of(h.cases[c]["source"]) for c in case])
    probs = np.zeros((len(y), 3))
    for name in sorted(set(fam.tolist())):
        out = fam == name
        if progress:
            progress(name)
        model = fit(x[~out], y[~out], row_weights(fam[~out], case[~out]), seed, params)
        probs[out] = model.predict_proba(x[out])
    return probs


# -- case-level outcomes, bounds and the operating point ----------------------------------------

def upper_bound(k: int, n: int, confidence: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound on a rate seen as k of n."""
    if n == 0:
        return 1.0
    if k >= n:
        return 1.0
    from scipy.stats import beta
    return float(beta.ppf(confidence, k + 1, n - k))


def wilson_lower(k: int, n: int, z: float = 1.645) -> float:
    if n == 0:
        return 0.0
    p = k / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - spread) / (1 + z * z / n))


def point_key(tier: str, context: bool, lang: str | None = None) -> str:
    """Operating points are kept per risk tier, apart for requests with and without a history,
    and per language where the calibration split resolves one: "low", "low:single", "low@en"."""
    key = tier if context else f"{tier}:single"
    return f"{key}@{lang}" if lang else key


def lookup_point(points: dict[str, float], tier: str, context: bool, lang: str) -> float:
    """The most specific point there is: tier, kind and language; tier and kind; kind; default."""
    for key in (point_key(tier, context, lang), point_key(tier, context), "context" if context else "single"):
        if key in points:
            return points[key]
    return points.get("default", 0.999)


def case_outcomes(h: Harvest, p_same: np.ndarray, thresholds: dict[str, float]) -> list[tuple[bool, bool]]:
    """(served, correct) per case: the best candidate by P(same) is served when it reaches the
    threshold of its tier and kind (``point_key``; else "single" / "context", else "default"),
    as the decider does."""
    best: dict[int, tuple[float, bool]] = {}
    for row, c in enumerate(h.case):
        if c not in best or p_same[row] > best[c][0]:
            best[c] = (float(p_same[row]), bool(h.target[row]))
    out = []
    for i, meta in enumerate(h.cases):
        p, is_target = best.get(i, (-1.0, False))
        needed = lookup_point(thresholds, meta["tier"], meta.get("context", True), meta.get("lang", ""))
        served = p >= needed
        out.append((served, served and is_target and meta["expect"] == "hit"))
    return out


def tally(h: Harvest, outcomes: list[tuple[bool, bool]], select: Callable[[dict], bool]) -> dict[str, Any]:
    pos = hits = neg = false = 0
    for meta, (served, correct) in zip(h.cases, outcomes):
        if not select(meta):
            continue
        if meta["expect"] == "hit":
            pos += 1
            hits += correct
            false += served and not correct
        else:
            neg += 1
            false += served
    return {"positives": pos, "hit_recall": hits / pos if pos else None,
            "recall_lower": wilson_lower(hits, pos) if pos else None, "negatives": neg,
            "false_hits": false, "false_hit_rate": false / neg if neg else None,
            "false_hit_upper": upper_bound(false, neg) if neg else None}


def lowest_safe(h: Harvest, p_same: np.ndarray, budget: float, select: Callable[[dict], bool]) -> float | None:
    """The lowest P(same) threshold (0.005 steps) whose upper bound on the false-hit rate of the
    selected cases is within ``budget``; None when they hold too few negatives to show it."""
    negatives = sum(1 for m in h.cases if select(m) and m["expect"] != "hit")
    if upper_bound(0, negatives) > budget:
        return None
    for t in np.round(np.arange(0.5, 1.0, 0.005), 3):
        r = tally(h, case_outcomes(h, p_same, {"default": float(t)}), select)
        if r["false_hit_upper"] <= budget:
            return float(t)
    return 0.999


def operating_points(h: Harvest, p_same: np.ndarray, budget: float, single_budget: float | None = None,
                     tiers: Sequence[str] = ("low", "medium"), select: Callable[[dict], bool] = lambda m: True
                     ) -> dict[str, float]:
    """Per risk tier and kind (with a history: ``budget``; without: ``single_budget``): the
    lowest threshold within budget on the selected (calibration) cases. A tier with too few
    negatives to resolve its bound takes the threshold of its kind pooled over tiers."""
    points: dict[str, float] = {}
    langs = sorted({m.get("lang", "") for m in h.cases if m.get("lang")})
    for kind, context, rate in (("context", True, budget), ("single", False, single_budget or budget)):
        of_kind = lambda m, c=context: select(m) and m.get("context", True) == c
        pooled = lowest_safe(h, p_same, rate, of_kind)
        points[kind] = 0.999 if pooled is None else pooled
        for tier in tiers:
            own = lowest_safe(h, p_same, rate, lambda m, t=tier: of_kind(m) and m["tier"] == t)
            points[point_key(tier, context)] = points[kind] if own is None else own
            for lang in langs:
                # A language's own point only where its cases resolve the bound, and never looser
                # than the pooled one: one language's ease must not lend the other recall.
                mine = lowest_safe(h, p_same, rate, lambda m, t=tier, l=lang: of_kind(m) and m["tier"] == t
                                   and m.get("lang") == l)
                if mine is not None:
                    points[point_key(tier, context, lang)] = mine
    points["default"] = max(points.values())
    return points


def calibration_split(h: Harvest, share: int = 5) -> np.ndarray:
    """One case in ``share`` of every source, chosen by a hash of its id, is kept out of
    training to choose the operating points on (the same cases on every run)."""
    import zlib
    return np.asarray([zlib.crc32(m["id"].encode("utf-8")) % share == 0 for m in h.cases])


def export(model, meta: dict[str, Any], features: Sequence[str] = FEATURES) -> TreeVerifier:
    return TreeVerifier.from_sklearn(model, features, meta)


__all__ = ["Harvest", "LABEL", "PARAMS", "POOL_SUFFIX", "harvest_pool", "load_pool", "calibration_split", "case_outcomes", "lookup_point", "lowest_safe", "point_key", "export", "family_of", "family_weights", "fit", "row_weights",
           "harvest", "harvest_dir", "held_out_predictions", "operating_points", "tally", "upper_bound",
           "wilson_lower"]
