"""Issue 28, item 7: every label the cache learns from keeps the verifier's evidence row, so the
verifier can be refitted on the tenant's own traffic (``learn/observations.py``). The log is
bounded, a session adds a bounded share of rows labelled the same, and the rows survive a
restart and are pooled by caches sharing a store."""

from __future__ import annotations

import json

import pytest

from smartcache import SmartCache, load_config
from smartcache.learn.observations import Labelled, ObservationLog, decode, encode

from conftest import U

FEATURES = ("a", "b")


def row(correct: bool, at: float, session: str = "s") -> Labelled:
    return Labelled((at, 1.0 - at), correct, 0.5, "en:single:low", at, "forwarded", session)


def test_the_log_keeps_the_newest_rows_and_a_session_adds_few_rows_labelled_the_same():
    log = ObservationLog(FEATURES, kept=5, labels_per_session=2)
    kept = [log.add("t", row(True, float(i), "flood")) for i in range(4)]
    assert kept == [True, True, False, False]          # one session's "same" labels are capped ...
    assert all(log.add("t", row(False, 10.0 + i, "flood")) for i in range(4))   # ... its wrong ones never
    rows = log.rows("t")
    assert len(rows) == 5 and rows.at.tolist() == [1.0, 10.0, 11.0, 12.0, 13.0]
    assert rows.correct.tolist() == [True, False, False, False, False] and rows.x.shape == (5, 2)
    assert not log.add("t", Labelled((1.0,), True, 0.5, "en:single:low", 0.0, "forwarded"))   # other features


def test_a_record_round_trips_and_another_is_refused():
    rows = [row(True, 1.0), row(False, 2.0, "other")]
    assert decode(encode(rows, FEATURES), FEATURES) == [
        Labelled((1.0, 0.0), True, 0.5, "en:single:low", 1.0, "forwarded", "s"),
        Labelled((2.0, -1.0), False, 0.5, "en:single:low", 2.0, "forwarded", "other")]
    with pytest.raises(ValueError):
        decode(encode(rows, FEATURES), ("a", "c"))
    with pytest.raises(ValueError):
        decode('{"format": "something else"}', FEATURES)
    log = ObservationLog(FEATURES, kept=3, labels_per_session=5)
    merged = log.merged("{not json", [row(True, 5.0)])                  # an unreadable record is replaced
    assert len(decode(merged, FEATURES)) == 1
    assert len(decode(log.merged(encode(rows * 2, FEATURES), [row(True, 9.0)]), FEATURES)) == 3


def _labelled_misses(cache, session: str, n: int = 3) -> None:
    """Requests near a stored one that the verifier refuses: each forwarded answer labels it."""
    stored = cache.store(cache.lookup([U("How do I deploy this service?")], session=session), "deploy it so")
    cache.promote(stored.cache_id)
    for i, text in enumerate(["How do I migrate this service?", "How do I monitor this service?",
                              "How do I restart this service?"][:n]):
        found = cache.lookup([U(text)], session=session)
        assert found.nearest is not None and found.nearest_features is not None
        cache.store(found, f"another answer {i}")


KEEP = {"observations_kept": 1000}      # off by default


def test_each_label_keeps_the_verifiers_evidence_row(encoder):
    cache = SmartCache(load_config(store={"backend": "memory"}, learning=KEEP), encoder=encoder)
    _labelled_misses(cache, "s1")
    rows = cache.observations("default")
    assert len(rows) == 3 and rows.x.shape == (3, len(cache.decider.verifier.features))
    assert not rows.correct.any() and all(s.startswith("en:single:") for s in rows.stratum)
    # The row is what the verifier weighed: its P(same) on it is the label's score.
    p = cache.decider.verifier.predict(rows.x)[:, 0]
    assert p == pytest.approx(rows.score, abs=1e-4)


def test_nothing_is_kept_with_learning_off_or_no_rows_to_keep(encoder):
    for overrides in ({"learning": {"enabled": False, **KEEP}}, {}):      # learning off; the default
        cache = SmartCache(load_config(store={"backend": "memory"}, **overrides), encoder=encoder)
        _labelled_misses(cache, "s1", 1)
        assert len(cache.observations("default")) == 0


def test_the_rows_survive_a_restart_and_two_caches_on_one_file_pool_them(encoder, tmp_path):
    config = load_config(store={"backend": "sqlite", "path": str(tmp_path / "c.db")},
                         learning={"persist_every": 1, **KEEP})
    first, second = (SmartCache(config, encoder=encoder) for _ in range(2))
    _labelled_misses(first, "s1", 2)
    _labelled_misses(second, "s2", 3)
    first.save_learned()
    second.save_learned()
    again = SmartCache(config, encoder=encoder)
    assert len(again.observations("default")) == 5


def test_a_corrupt_stored_record_is_replaced_not_raised(encoder):
    """A record cut short (valid JSON, half an archive) must neither stop the tenant's requests
    nor the next save: it is read as nothing and replaced by the merge."""
    config = load_config(store={"backend": "memory"}, learning={"persist_every": 1, **KEEP})
    cache = SmartCache(config, encoder=encoder)
    good = encode([row(True, 1.0)], FEATURES)
    data = json.loads(good)
    data["arrays"] = data["arrays"][: len(data["arrays"]) // 2]
    cache.backend.save_state("observations:default", json.dumps(data))
    _labelled_misses(cache, "s1", 2)
    cache.save_learned()
    assert len(cache.observations("default")) == 2
    for broken in (json.dumps(data), json.dumps({**json.loads(good), "arrays": "!!!"}),
                   json.dumps({**json.loads(good), "features": 5}), json.dumps({**json.loads(good), "kind": None}),
                   json.dumps({**json.loads(good), "stratum": [1]}), "{not json"):
        with pytest.raises(ValueError):
            decode(broken, FEATURES)


def test_a_bad_tenant_is_a_typed_error(encoder):
    from smartcache.errors import InvalidRequest

    cache = SmartCache(load_config(store={"backend": "memory"}), encoder=encoder)
    with pytest.raises(InvalidRequest):
        cache.observations("")
