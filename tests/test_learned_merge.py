"""Replicas that share a store pool what each learned (issue 28): a save adds this process's
news to the stored state in one atomic update, never overwrites another replica's labels."""

from __future__ import annotations

import threading
import uuid

import pytest

from conftest import U
from smartcache import SmartCache, load_config
from smartcache.errors import StoreError
from smartcache.learn.policy import CHECK, LearnedPolicy, Observation, Witnesses
from smartcache.store import MemoryStore
from smartcache.store.sqlite import SqliteStore

STRATUM = "en:single:low"
DIM = 8


def learn(policy: LearnedPolicy, n: int, score: float, correct: bool, who: str) -> None:
    for i in range(n):
        policy.observe(Observation("t", STRATUM, score, correct, f"{who}-e{i}", session=f"{who}-s{i}"))


def save(policy: LearnedPolicy, store) -> str:
    """What ``SmartCache._save_learned`` does."""
    news = policy.take_news("t")
    text = store.update_state("learned:t", lambda stored: policy.merged(stored, news))
    policy.adopt("t", text)
    return text


def observations(policy: LearnedPolicy) -> float:
    return policy.summary("t")[STRATUM]["observations"]


def test_two_replicas_pool_their_labels_instead_of_overwriting_them():
    store = MemoryStore(DIM)
    a, b = LearnedPolicy(), LearnedPolicy()
    learn(a, 300, 0.5, True, "a")
    learn(b, 200, 0.5, True, "b")
    learn(b, 1, 0.6, False, "b-wrong")
    save(a, store)
    save(b, store)          # last writer: it used to keep only its own 201
    assert observations(b) == pytest.approx(501, abs=5)
    assert b.summary("t")[STRATUM]["wrong"] == pytest.approx(1, abs=0.01)
    assert not b.admits("t", "b-wrong-e0", 0.55)         # its floor travels too
    save(a, store)          # a's next save reads b's labels back, and adds nothing twice
    assert observations(a) == pytest.approx(501, abs=5)
    assert not a.admits("t", "b-wrong-e0", 0.55)
    assert save(a, store) == save(a, store)              # nothing new: the same state


def test_counts_floors_checks_and_witnesses_merge():
    store = MemoryStore(DIM)
    a, b = LearnedPolicy(), LearnedPolicy()
    a.observe(Observation("t", STRATUM, 0.9, False, "e1", CHECK, session="x"))
    b.observe(Observation("t", STRATUM, 0.7, False, "e1", CHECK, session="y"))
    a.served("t", STRATUM)
    b.served("t", STRATUM)
    b.served("t", STRATUM)
    a.witness("t", "req", Witnesses("e-first", ("s1",)))
    b.witness("t", "req", Witnesses("e-other", ("s2", "s1")))
    b.witness("t", "own", Witnesses("e3", ("s9",), personal=True))
    save(a, store)
    save(b, store)
    assert b.live("t") == (2, 2)
    assert b.summary("t")[STRATUM]["served"] == 3
    assert not b.admits("t", "e1", 0.85) and b.admits("t", "e1", 0.95)     # the higher floor stands
    assert b.witnesses("t", "req") == Witnesses("e-first", ("s1", "s2"))    # the first answer, every session
    assert b.witnesses("t", "own").personal


def test_labels_learned_during_a_save_are_kept_and_still_news():
    store = MemoryStore(DIM)
    policy = LearnedPolicy()
    learn(policy, 100, 0.5, True, "before")
    news = policy.take_news("t")
    learn(policy, 50, 0.5, True, "during")        # arrives while the store is written
    text = store.update_state("learned:t", lambda stored: policy.merged(stored, news))
    policy.adopt("t", text)
    assert observations(policy) == pytest.approx(150, abs=1)
    save(policy, store)                           # the 50 are saved by the next save, once
    assert observations(policy) == pytest.approx(150, abs=1)


def test_a_failed_save_keeps_the_news_for_the_next(encoder):
    cache = SmartCache(load_config(store={"backend": "memory"}, learning={"persist_every": 1}), encoder=encoder)
    cache.lookup([U("anything at all")], session="s1")          # the tenant's state is read
    learn(cache.policy, 40, 0.5, True, "x")

    def down(name, merge):
        raise StoreError("the store is down")
    store = cache.backend.inner
    store.update_state = down
    cache._save_learned("t")                                    # logged, and the news given back
    del store.update_state
    learn(cache.policy, 10, 0.5, True, "y")
    save(cache.policy, store)       # the guard holds the store as down a while: straight to it
    stored = LearnedPolicy()
    stored.restore("t", store.load_state("learned:t"))
    assert observations(stored) == pytest.approx(50, abs=1)


def test_an_unreadable_stored_state_is_replaced_by_the_merge():
    store = MemoryStore(DIM)
    store.save_state("learned:t", "{broken")
    policy = LearnedPolicy()
    learn(policy, 10, 0.5, True, "a")
    save(policy, store)
    check = LearnedPolicy()
    check.restore("t", store.load_state("learned:t"))
    assert observations(check) == pytest.approx(10, abs=0.1)


def _counter(stored: str | None) -> str:
    return str(int(stored or "0") + 1)


@pytest.mark.parametrize("backend", ["memory", "sqlite", pytest.param("redis", marks=pytest.mark.integration)])
def test_update_state_is_atomic_across_connections(backend, tmp_path, request):
    """Eight writers, each with its own connection to the store, add 1 twenty times each: a
    read-modify-write that lost a race would lose an increment."""
    if backend == "memory":
        shared = MemoryStore(DIM)
        stores = [shared] * 8
    elif backend == "sqlite":
        stores = [SqliteStore(tmp_path / "s.db", DIM) for _ in range(8)]
    else:
        from smartcache.store.redis import RedisStore
        url, prefix = request.getfixturevalue("redis_url"), f"merge{uuid.uuid4().hex[:8]}:"
        stores = [RedisStore(url, DIM, prefix=prefix) for _ in range(8)]

    def writer(store) -> None:
        for _ in range(20):
            store.update_state("learned:count", _counter)
    threads = [threading.Thread(target=writer, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert stores[0].load_state("learned:count") == "160"


def test_two_caches_on_one_sqlite_file_learn_together(encoder, tmp_path):
    """Two workers of ``serve --workers 2``: each saves what it learned, and the file holds both."""
    config = load_config(store={"backend": "sqlite", "path": str(tmp_path / "c.db")}, learning={"persist_every": 1})
    first, second = (SmartCache(config, encoder=encoder) for _ in range(2))
    for cache in (first, second):
        cache.lookup([U("anything at all")], session="s1")
    learn(first.policy, 150, 0.5, True, "first")
    learn(second.policy, 150, 0.5, True, "second")
    first.save_learned()
    second.save_learned()
    reread = LearnedPolicy()
    reread.restore("t", SqliteStore(tmp_path / "c.db", first.encoder.dim).load_state("learned:t"))
    assert observations(reread) == pytest.approx(300, abs=3)
