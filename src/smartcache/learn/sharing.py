"""Proven safe across users: what enters a tenant's global pool without an admin.

An answer is shared once the engine gave equivalent answers to one request from
``need`` distinct sessions, or from fewer once the tenant's own traffic has proven that a
later session asking words already asked gets the first answer (``LearnedPolicy.sharing_point``:
every later session's answer to such words is compared with the first, pooled across the
tenant's requests, under the error bound δ). "One request" is a class of phrasings: the same words
(after the same history, under the same versions), or a rewording the engine answered
the same as a near class's first answer (the judge for the nearest classes, an identical
answer for the rest of the candidates). Each phrasing keeps its own first answer and
key, so a shared class serves each of its wordings word for word, and the semantic path
compares later ones with all of them. Answers that differ between sessions for the same
words are personal: the class is never shared, and what it had shared is withdrawn.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from smartcache.errors import InvalidRequest, StoreError
from smartcache.learn.judge import AnswerJudge, Label
from smartcache.learn.phrasings import Phrasings
from smartcache.learn.policy import MEMBERS, LearnedPolicy, SharingPoint, Witnesses
from smartcache.store import Entry, EntryState, Scope

log = logging.getLogger("smartcache.sharing")

JOIN_NEAREST = 64       # tracked phrasings a new one looks through, nearest first,
JOIN_CLASSES = 8        # for the classes whose answers the judge compares with it (one phrasing each),
JOIN_FLOOR = 0.5        # ... at this cosine or more;
JOIN_IDENTICAL = 24     # and further classes whose answers are compared letter for letter only (a read each)
HYDRATE = 64            # tracked phrasings another process added, indexed per witness (a get each)
POOLED_KEPT = 100_000   # entries remembered as shared, so a shared class's witness reads none again


@dataclass(frozen=True)
class Asked:
    """One session's request and the engine's answer to it, just stored as ``entry``.
    ``key``: its words, history and versions; ``group``: its history and versions, the
    phrasings it may join; ``personal``: the conversation or answer holds personal data."""

    tenant: str
    session: str
    key: str
    group: str
    vector: np.ndarray
    entry: str
    answer: str
    personal: bool = False


class ProvenSharing:
    """Counts, per class of phrasings, the sessions the engine answered alike, and promotes
    the class's answers to the global pool once ``need`` sessions have. One witness at a time:
    a record is read, judged and written under one lock, so no session or flag is lost."""

    def __init__(self, policy: LearnedPolicy, store: Callable[[], object], lifecycle: Callable[[], object],
                 judge: AnswerJudge, *, need: int, save: Callable[[str], None], count: Callable[[str], None],
                 phrasings: Phrasings | None = None) -> None:
        self.policy, self.judge, self.need = policy, judge, need
        self._store, self._lifecycle, self._save, self._count = store, lifecycle, save, count
        self.phrasings = phrasings if phrasings is not None else Phrasings()
        self._lock = threading.Lock()
        self._stale: set[str] = set()                   # tenants whose state came from the store
        self._unindexed: dict[str, list[str]] = {}      # their tracked keys not in the index yet
        self._tried: dict[str, set[str]] = {}           # keys looked up once (dead ones stay out)
        self._pooled: set[str] = set()                  # entries this process put in the global pool

    def adopted(self, tenant: str) -> None:
        """The tenant's state was read back from the store (a restart, another worker's news):
        its phrasings are indexed a few at a time by the next witnesses. Takes no lock: it is
        called while a witness saves."""
        self._stale.add(tenant)

    def witness(self, asked: Asked) -> None:
        with self._lock:
            self._index_stored(asked.tenant)
            seen = self.policy.witnesses(asked.tenant, asked.key)
            if asked.personal:
                if seen is None:
                    self._keep(asked.tenant, asked.key, Witnesses(asked.entry, (asked.session,), personal=True))
                elif not seen.personal:
                    self._make_personal(asked.tenant, asked.key, seen)
                return
            if seen is None:
                if not self._join(asked):
                    self._keep(asked.tenant, asked.key, Witnesses(asked.entry, (asked.session,)))
                self.phrasings.add(asked.tenant, asked.group, asked.key, asked.vector)
                return
            if seen.personal or asked.session in seen.sessions:
                return
            root_key, root = self._class_of(asked.tenant, asked.key, seen)
            if root.personal:
                return
            first = self._get(seen.entry)
            if first is None or first.state is EntryState.INVALID:
                # Gone: this answer starts the words' count again. A root keeps its class (what it
                # shared stays listed, to be withdrawn); a member leaves its class and starts its own.
                if root_key == asked.key:
                    self._keep(asked.tenant, asked.key, replace(root, entry=asked.entry, sessions=(asked.session,)))
                else:
                    self._keep(asked.tenant, asked.key, Witnesses(asked.entry, (asked.session,)))
                return
            label = self.judge.compare(first.answer.text, asked.answer).label
            if label is Label.UNDECIDED:
                return
            # These words' first answer against a later session's: what sharing them would have
            # served that session, the pooled evidence that lowers ``need`` (policy.sharing_point).
            # At most need - 1 of them a question (sessions keep coming while its answer waits out
            # its promotion window): one popular question proves nothing about the others.
            if len(seen.sessions) < self.need and self.policy.compared(asked.tenant, asked.session,
                                                                       label is Label.SAME):
                self._save(asked.tenant)
            if label is Label.DIFFERENT:        # the engine answers these words differently per session
                self._make_personal(asked.tenant, asked.key, seen)
                return
            if root_key != asked.key:
                self._keep(asked.tenant, asked.key, replace(seen, sessions=seen.sessions + (asked.session,)))
            self._share(asked.tenant, root_key, _with_session(root, asked.session))

    def _index_stored(self, tenant: str) -> None:
        """Index up to HYDRATE of the tracked phrasings this process has not seen, newest first,
        by their entries' turn vectors."""
        if tenant in self._stale:
            self._stale.discard(tenant)
            tried = self._tried.setdefault(tenant, set())
            keys = self.policy.shared_keys(tenant)[-self.phrasings.kept:]
            self._unindexed[tenant] = [k for k in keys if k not in tried and not self.phrasings.has(tenant, k)]
        queue = self._unindexed.get(tenant)
        if not queue:
            return
        batch, self._unindexed[tenant] = queue[-HYDRATE:], queue[:-HYDRATE]
        tried = self._tried[tenant]
        if len(tried) > 4 * self.phrasings.kept:        # bounded; a key tried long ago may be tried again
            tried.clear()
        for key in reversed(batch):
            tried.add(key)
            record = self.policy.witnesses(tenant, key)
            entry = None if record is None or record.personal else self._get(record.entry)
            if entry is not None and entry.state is not EntryState.INVALID:
                self.phrasings.add(tenant, "|".join(key.split("|", 2)[:2]), key, entry.turn_vector)

    def _join(self, asked: Asked) -> bool:
        """A new wording joins the class of the nearest tracked one the engine answered alike.
        An unlike answer says only that the two ask different things: no one is made personal."""
        seen: set[str] = set()
        judged = 0
        for near, cosine in self.phrasings.nearest(asked.tenant, asked.group, asked.vector, JOIN_NEAREST, -1.0):
            record = self.policy.witnesses(asked.tenant, near)
            if near == asked.key or record is None or record.personal:
                continue
            root_key, root = self._class_of(asked.tenant, near, record)
            if root_key in seen or root.personal or len(root.members) >= MEMBERS:
                continue
            if len(seen) == JOIN_CLASSES + JOIN_IDENTICAL:
                break
            seen.add(root_key)
            # The class's first answer, not the nearest wording's: alike with alike along a chain
            # of rewordings could drift from the question the class was proven on.
            first = self._get(root.entry)
            if first is None or first.state is EntryState.INVALID:
                continue
            # The judge in full for the nearest classes; beyond them, only an answer the engine
            # gave letter for letter (a deterministic engine's FAQ answer) tells a rewording.
            if judged < JOIN_CLASSES and cosine >= JOIN_FLOOR:
                judged += 1
                if self.judge.compare(first.answer.text, asked.answer).label is not Label.SAME:
                    continue
            elif not self.judge.identical(first.answer.text, asked.answer):
                continue
            self._keep(asked.tenant, asked.key, Witnesses(asked.entry, (asked.session,), root=root_key))
            self._share(asked.tenant, root_key,
                        replace(_with_session(root, asked.session), members=root.members + (asked.entry,)))
            return True
        return False

    def _share(self, tenant: str, root_key: str, root: Witnesses) -> None:
        """Keep the class; once ``need`` sessions got its answer, promote each phrasing's first
        answer whose own window has passed (a pending one waits for the class's next witness)."""
        shared = root.shared
        if len(root.sessions) >= self.sessions_needed(tenant, root):
            for cache_id in (root.entry, *root.members):
                if cache_id in self._pooled:
                    continue
                entry = self._get(cache_id)
                if entry is None or entry.state is not EntryState.READY or entry.scope is Scope.GLOBAL:
                    continue
                try:
                    self._lifecycle().promote(cache_id, to_global=True)
                except (StoreError, InvalidRequest, KeyError) as exc:
                    log.warning("smartcache could not share %s: %s", cache_id, exc)
                    continue
                self._count("shared")
                if len(self._pooled) >= POOLED_KEPT:
                    self._pooled.clear()
                self._pooled.add(cache_id)
                shared = True
        self._keep(tenant, root_key, replace(root, shared=shared))

    def sessions_needed(self, tenant: str, root: Witnesses | None = None, point: SharingPoint | None = None) -> int:
        """``need``, or the policy's fewer once the tenant's comparisons have proven it. The proof
        is about the same words asked again: a class that rewordings joined keeps ``need``."""
        if root is not None and root.members:
            return self.need
        point = point or self.policy.sharing_point(tenant)
        return min(self.need, point.need) if point.source == "proven" else self.need

    def shared(self, tenant: str, key: str) -> bool:
        """Whether these words' class has answers in the global pool by proven sharing."""
        with self._lock:
            seen = self.policy.witnesses(tenant, key)
            if seen is None or seen.personal:
                return False
            _, root = self._class_of(tenant, key, seen)
            return root.shared and not root.personal

    def contradicted(self, tenant: str, key: str, session: str) -> None:
        """A check found the engine answering these shared words otherwise for ``session``: the
        words are personal, their class's answers are withdrawn, and the tenant's sharing bound
        counts a difference."""
        with self._lock:
            seen = self.policy.witnesses(tenant, key)
            if seen is None or seen.personal:
                return
            if self.policy.compared(tenant, session, False):
                self._save(tenant)
            self._make_personal(tenant, key, seen)

    def _make_personal(self, tenant: str, key: str, seen: Witnesses) -> None:
        """Never share these words, nor the class they joined; withdraw what it shared."""
        root_key, root = self._class_of(tenant, key, seen)
        self._keep(tenant, key, replace(seen, personal=True, shared=False))
        if root_key != key:
            self._keep(tenant, root_key, replace(root, personal=True, shared=False))
        # Every entry the class may have shared: its list, and the records that name it as their
        # root (a replica's merge or a full list may have left one out). Flags can be stale: each
        # entry's scope says whether it is in the pool.
        listed = {root.entry, *root.members, seen.entry}
        for other in self.policy.shared_keys(tenant):
            record = self.policy.witnesses(tenant, other)
            if record is not None and record.root == root_key:
                listed |= {record.entry, *record.members}
        for cache_id in sorted(listed):
            self._pooled.discard(cache_id)
            entry = self._get(cache_id)
            if entry is None or entry.scope is not Scope.GLOBAL or entry.state is EntryState.INVALID:
                continue
            try:
                self._lifecycle().invalidate(tenant=tenant, cache_id=cache_id)
            except StoreError as exc:
                log.warning("smartcache could not withdraw shared %s: %s", cache_id, exc)

    def _class_of(self, tenant: str, key: str, record: Witnesses) -> tuple[str, Witnesses]:
        """The record that counts the class's sessions: the root's, or its own (a root, or a
        member whose root was forgotten)."""
        if record.root:
            root = self.policy.witnesses(tenant, record.root)
            # A root that is itself a member (replicas' merges can cross two classes), or that no
            # longer lists this one (it was forgotten and asked anew), is not this one's class.
            if root is not None and not root.root and record.entry in root.members:
                return record.root, root
        return key, replace(record, root="")

    def _get(self, cache_id: str) -> Entry | None:
        try:
            return self._store().get(cache_id)
        except StoreError:
            return None

    def _keep(self, tenant: str, key: str, record: Witnesses) -> None:
        if self.policy.witness(tenant, key, record):
            self._save(tenant)


def _with_session(record: Witnesses, session: str) -> Witnesses:
    return record if session in record.sessions else replace(record, sessions=record.sessions + (session,))


__all__ = ["Asked", "HYDRATE", "JOIN_CLASSES", "JOIN_FLOOR", "JOIN_IDENTICAL", "JOIN_NEAREST", "ProvenSharing"]
