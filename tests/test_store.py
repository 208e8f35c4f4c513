"""The memory store against a naive reference: scoping never leaks, search is exact."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from smartcache.fingerprint import Signature
from smartcache.store import Answer, Entry, EntryState, MemoryStore, Scope, SearchFilter
from conftest import FakeClock

DIM = 8
TENANTS = ["t1", "t2"]
SESSIONS = ["a", "b", "c"]
VERSIONS = ["v1", "v2"]
SIG = Signature("x", "general", "other", (), frozenset(), 0, (), frozenset(), "h", False)


def make_entry(i: int, *, tenant="t1", session="a", scope=Scope.SESSION, version="v1",
               state=EntryState.READY, vector=None, expires=float("inf"), domain="general") -> Entry:
    rng = np.random.default_rng(i)
    vec = vector if vector is not None else rng.normal(size=DIM).astype(np.float32)
    vec = (vec / np.linalg.norm(vec)).astype(np.float32)
    return Entry(cache_id=f"e{i}", scope=scope, tenant=tenant, session_id=session, version_key=version,
                 context_fingerprint="", signature=SIG, turn_vector=vec, context_vector=None, prefix_hash="p",
                 conversation_hash=f"c{i % 3}", answer=Answer(f"answer {i}"), state=state, created_at=0.0,
                 expires_at=expires, domain=domain)


def reference_search(entries, flt, vector, k):
    admitted = [e for e in entries if flt.admits(e)]
    admitted.sort(key=lambda e: -float(e.turn_vector @ vector))
    return [e.cache_id for e in admitted[:k]]


class StoreMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.store = MemoryStore(DIM)
        self.model: dict[str, Entry] = {}
        self.counter = 0

    @rule(tenant=st.sampled_from(TENANTS), session=st.sampled_from(SESSIONS), version=st.sampled_from(VERSIONS),
          scope=st.sampled_from(list(Scope)), state=st.sampled_from(list(EntryState)),
          domain=st.sampled_from(["general", "travel", "code"]))
    def put(self, tenant, session, version, scope, state, domain):
        self.counter += 1
        entry = make_entry(self.counter, tenant=tenant, session=session, scope=scope, version=version,
                           state=state, domain=domain)
        self.store.put(entry)
        self.model[entry.cache_id] = entry

    @rule(data=st.data())
    def update_state(self, data):
        if self.model:
            cid = data.draw(st.sampled_from(sorted(self.model)))
            state = data.draw(st.sampled_from(list(EntryState)))
            scope = data.draw(st.sampled_from(list(Scope)))
            self.model[cid] = self.store.update(cid, state=state, scope=scope)

    @rule(data=st.data(), seed=st.integers(0, 10_000))
    def move(self, data, seed):
        """The same entry put again with another vector: its row changes in place."""
        if self.model:
            cid = data.draw(st.sampled_from(sorted(self.model)))
            vec = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
            entry = self.model[cid].with_changes(turn_vector=(vec / np.linalg.norm(vec)).astype(np.float32))
            self.store.put(entry)
            self.model[cid] = entry

    @rule(data=st.data())
    def delete(self, data):
        if self.model:
            cid = data.draw(st.sampled_from(sorted(self.model)))
            assert self.store.delete(cid)
            del self.model[cid]

    @rule(tenant=st.sampled_from(TENANTS), session=st.sampled_from(SESSIONS + [None]),
          version=st.sampled_from(VERSIONS), include_global=st.booleans(), seed=st.integers(0, 10_000),
          domain=st.sampled_from([None, "general", "travel"]), again=st.booleans())
    def search(self, tenant, session, version, include_global, seed, domain, again):
        if again and getattr(self, "vec", None) is not None:
            vec = self.vec      # the very same array: the store's scan memo must see what changed since
        else:
            vec = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
            vec /= np.linalg.norm(vec)
            self.vec = vec
        flt = SearchFilter(tenant=tenant, version_key=version, session_id=session, include_global=include_global,
                           domain=domain, now=1.0)
        got = self.store.search(flt, vec, k=5)
        for hit in got:   # the invariant that matters most: nothing outside the scope, ever
            e = hit.entry
            assert e.tenant == tenant and e.version_key == version and e.state.servable
            assert e.scope is Scope.GLOBAL or e.session_id == session
        assert [h.entry.cache_id for h in got] == reference_search(self.model.values(), flt, vec, 5)

    @invariant()
    def same_contents(self):
        assert len(self.store) == len(self.model)
        assert {e.cache_id for e in self.store} == set(self.model)
        for conv in ("c0", "c1", "c2"):
            assert {e.cache_id for e in self.store.find(conversation_hash=conv)} == {
                cid for cid, e in self.model.items() if e.conversation_hash == conv}

    @invariant()
    def lifecycle_queries_match_the_reference(self):
        # The state indexes are kept by put / update / delete: they must agree with the entries.
        pending = {cid for cid, e in self.model.items() if e.state is EntryState.PENDING}
        assert set(self.store.pending_due(0.0, 10_000)) == pending and self.store.pending_due(-1.0, 10) == []
        assert set(self.store.purgeable(1.0, 10_000)) == {
            (cid, False) for cid, e in self.model.items() if e.state is EntryState.INVALID}
        assert {u.cache_id for u in self.store.usage()} == {
            cid for cid, e in self.model.items() if e.state is not EntryState.FROZEN}


TestStoreMachine = pytest.mark.integration(StoreMachine.TestCase)
TestStoreMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)


def test_search_respects_expiry_and_feedback_floor():
    store = MemoryStore(DIM)
    v = np.ones(DIM, np.float32) / np.sqrt(DIM)
    store.put(make_entry(1, vector=v, expires=10.0))
    store.put(make_entry(2, vector=v))
    store.update("e2", feedback_score=0.2)
    flt = SearchFilter(tenant="t1", version_key="v1", session_id="a", now=5.0, feedback_floor=0.5)
    assert [h.entry.cache_id for h in store.search(flt, v, 5)] == ["e1"]
    later = SearchFilter(tenant="t1", version_key="v1", session_id="a", now=11.0, feedback_floor=0.5)
    assert store.search(later, v, 5) == []
    store.update("e1", state=EntryState.FROZEN)
    assert [h.entry.cache_id for h in store.search(later, v, 5)] == ["e1"]   # frozen never expires


def test_wrong_dimension_is_refused():
    with pytest.raises(ValueError):
        MemoryStore(4).put(make_entry(1))


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=300), st.integers(min_value=1, max_value=20))
def test_exact_search_matches_brute_force(n, k):
    store = MemoryStore(DIM)
    entries = [make_entry(i) for i in range(n)]
    for e in entries:
        store.put(e)
    q = entries[0].turn_vector
    flt = SearchFilter(tenant="t1", version_key="v1", session_id="a")
    assert [h.entry.cache_id for h in store.search(flt, q, k)] == reference_search(entries, flt, q, k)


def test_markers_expire_and_are_taken_once():
    clock = FakeClock()
    store = MemoryStore(4)
    store.clock = clock     # expiry seen on a fake clock, without sleeping
    store.set_marker("answered:k", "x", 5.0)
    assert store.get_marker("answered:k") == "x"
    assert store.take_marker("answered:k") == "x" and store.take_marker("answered:k") is None
    store.set_marker("short", "y", 0.05)
    clock.advance(0.04)
    assert store.get_marker("short") == "y"
    clock.advance(0.02)
    assert store.get_marker("short") is None and store.take_marker("short") is None


def test_a_cache_runs_the_markers_of_a_store_it_makes_on_its_clock(encoder):
    from smartcache import SmartCache, load_config

    clock = FakeClock()
    cache = SmartCache(load_config(use_verifier=False), encoder=encoder, clock=clock)
    cache.backend.set_marker("answered:k", "x", 5.0)
    clock.advance(4.9)
    assert cache.backend.get_marker("answered:k") == "x"
    clock.advance(0.2)
    assert cache.backend.get_marker("answered:k") is None



@pytest.mark.parametrize("change", ["put again", "update", "delete"])
def test_a_search_again_with_the_same_vector_sees_what_changed_since(change):
    """The store keeps its last scan's scores for a second search with the very same vector
    (a lookup's domain search, then its near-exact one): a row changed since is scored anew."""
    store = MemoryStore(DIM)
    entries = [make_entry(i) for i in range(40)]
    for e in entries:
        store.put(e)
    q = entries[7].turn_vector.copy()
    flt = SearchFilter(tenant="t1", version_key="v1", session_id="a")
    assert store.search(flt, q, 1)[0].entry.cache_id == "e7"
    far = (-q).astype(np.float32)
    if change == "put again":
        store.put(entries[7].with_changes(turn_vector=far))
        entries[7] = entries[7].with_changes(turn_vector=far)
    elif change == "update":
        store.update("e7", turn_vector=far)
        entries[7] = entries[7].with_changes(turn_vector=far)
    else:
        store.delete("e3")
        del entries[3]
    found = store.search(flt, q, 40)
    assert [h.entry.cache_id for h in found] == reference_search(entries, flt, q, 40)
    for hit in found:
        assert hit.similarity == pytest.approx(float(hit.entry.turn_vector @ q), abs=1e-6)
