"""Judging one candidate entry against the current request: the rules that refuse a hit.

Vectors say "these read alike"; these rules say why reading alike is not
enough: another context, a reversed intent, another entity, a one-word swap
that makes it a different task ("请假邮件" / "投诉邮件"), an added condition.

    >>> substituted_spans("帮我写一封请假邮件", "帮我写一封投诉邮件")
    [('请假', '投诉')]
    >>> substituted_spans("怎么部署这个服务", "如何部署这个服务")
    []
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

import numpy as np

from smartcache.decide.decision import Reason, Zone
from smartcache.decide.thresholds import Thresholds
from smartcache.fingerprint import ChangeFlag, Fingerprint, skeletons_conflict
from smartcache.store import Entry, Scope

# Spans that may replace each other without changing what is asked.
_SYNONYMS = [frozenset(group.split("|")) for group in (
    "怎么|如何|怎样|咋|怎么样|如何才能|怎样才能", "多久|几天|多长时间|多少天|什么时候|多少时间", "多少钱|价格|费用|价钱|多少|收费", "酒店|宾馆|旅馆|住处", "便宜|实惠|划算|性价比高",
    "好吃|美味|好吃的", "推荐|介绍|建议|推荐一下", "开启|打开|启用|开通", "关闭|关掉|停用", "能|可以|能够|可|会",
    "帮我|给我|请|麻烦|帮忙", "写|起草|撰写|写一下", "问题|故障|毛病", "退款|退钱", "快递|物流|包裹", "吗|么|呢|吧",
    "值不值得|值得|好不好|怎么样|如何", "是什么|什么是|指什么", "步骤|流程|方法|办法", "订|预订|预定", "附近|周边|旁边",
    "how do i|how can i|how to|how should i|how do you|how can you", "can|could|would|will", "cheap|affordable|inexpensive",
    "fix|solve|resolve", "error|issue|problem|bug", "show|tell|give|provide", "best|good|top|great", "what is|what's|explain",
    "steps|process|way|procedure", "near|close to|around", "set up|setup|configure|install",
)]
# Tokens dropped before diffing. Chinese is diffed by character, so only particles
# that are never part of a content word are dropped ("请" is not: "请假").
_FILLER = frozenset("的 了 吗 呢 吧 啊 呀 嘛 please the a an me my i you to for of is are do does "
                    "can could would will just kindly some".split())
_MAX_SLOT = 4   # a swapped word: up to 4 CJK characters or 4 English words; longer is a rephrasing
_TOKEN = re.compile(r"[\u3400-\u9fff]|[a-z0-9_.+#'-]+", re.I)


# Chinese politeness and measure fillers, stripped as phrases before the per-character diff.
_ZH_FILLER = re.compile(r"一下|请问|麻烦你?|帮忙|帮我|给我|能不能|可不可以|可以|能否|1个|个(?![人税性体])")


def _tokens(text: str) -> list[str]:
    text = _ZH_FILLER.sub("", text.lower())
    return [t for t in _TOKEN.findall(text) if t not in _FILLER]


def _synonyms(a: str, b: str) -> bool:
    return any(a in group and b in group for group in _SYNONYMS)


def substituted_spans(a: str, b: str) -> list[tuple[str, str]]:
    """Spans that one text replaces in the other, when the two are otherwise the same
    sentence (a "minimal pair"); synonym swaps are not listed. Empty when the texts
    are rephrasings rather than one-slot edits."""
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return []
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    common = sum(block.size for block in matcher.get_matching_blocks())
    if common / max(len(ta), len(tb)) < 0.5:
        return []
    joiner = lambda toks: ("" if all(len(t) == 1 and t >= "\u3400" for t in toks) else " ").join(toks)
    spans = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "replace" and i2 - i1 <= _MAX_SLOT and j2 - j1 <= _MAX_SLOT:
            x, y = joiner(ta[i1:i2]), joiner(tb[j1:j2])
            if not _synonyms(x, y):
                spans.append((x, y))
    return spans


@dataclass(frozen=True)
class Judgement:
    """The verdict on one candidate: its zone, why, and the context similarity used."""

    zone: Zone
    reasons: tuple[Reason, ...]
    turn: float
    context: float | None


def context_similarity(fp: Fingerprint, entry: Entry) -> float | None:
    """1.0 for byte-identical histories (or none on both sides); the cosine of the
    context vectors otherwise; None when only one side has a context."""
    if entry.prefix_hash == fp.signature.history_hash:
        return 1.0
    if fp.context_vector is None and entry.context_vector is None:
        return 1.0
    if fp.context_vector is None or entry.context_vector is None:
        return None
    return float(np.dot(fp.context_vector, entry.context_vector))


_UNRESOLVED_REFERENCE = re.compile(r"那家|这家|那个|它|\bit\b|\bthat one\b|\bthis one\b|\bthere\b")
# Flags that modify a request (rather than reverse, correct or reset it): half-hit material.
MODIFY = frozenset({ChangeFlag.ADDITION, ChangeFlag.REMOVAL, ChangeFlag.REPLACEMENT})


def judge(fp: Fingerprint, entry: Entry, turn: float, limits: Thresholds) -> Judgement:
    """Zone for serving ``entry`` to the request ``fp`` whose turn cosine to it is ``turn``."""
    probe, cached = fp.signature, entry.signature
    eid = entry.cache_id

    def verdict(zone: Zone, code: str, detail: str, context: float | None) -> Judgement:
        return Judgement(zone, (Reason(code, detail, eid),), turn, context)

    # 1. Context gate. A global entry is a context-free FAQ answer: it needs a self-contained turn.
    if entry.scope is Scope.GLOBAL:
        context = None
        if _UNRESOLVED_REFERENCE.search(probe.text):
            return verdict(Zone.MISS, "context_dependent", "a global entry cannot answer a turn that refers back", None)
    else:
        context = context_similarity(fp, entry)
        if context is None:
            return verdict(Zone.MISS, "context_mismatch", "only one of the two requests has a history", None)
        if context < limits.context:
            return verdict(Zone.MISS, "context_mismatch", f"context cosine {context:.3f} < {limits.context}", context)
        if context < 1.0 and probe.context_entities != cached.context_entities:
            diff = sorted(probe.context_entities ^ cached.context_entities)[:4]
            return verdict(Zone.MISS, "context_entities", f"the histories are about different things: {diff}", context)
    if turn < limits.half_hit:
        return verdict(Zone.MISS, "low_similarity", f"turn cosine {turn:.3f} < {limits.half_hit}", context)

    # 2. Intent: a reversed ask is a different request, never a half-hit.
    if probe.negations % 2 != cached.negations % 2:
        return verdict(Zone.MISS, "intent_reversal", "one request negates what the other asks", context)
    if any(a * b < 0 for a, b in zip(probe.sides, cached.sides)):
        return verdict(Zone.MISS, "intent_reversal", "the requests ask for opposite actions", context)
    if skeletons_conflict(probe.skeleton, cached.skeleton):
        return verdict(Zone.MISS, "task_skeleton", f"{probe.skeleton!r} is not {cached.skeleton!r}", context)

    # 3. Entities: what the turn is about, with references resolved against its own context.
    mine, theirs = set(probe.entities), set(cached.entities)
    added = mine - theirs - cached.context_entities
    dropped = theirs - mine - probe.context_entities
    modifies = bool(probe.flags & MODIFY) and not (cached.flags & MODIFY)
    if added and dropped:
        zone = Zone.HALF_HIT if modifies else Zone.MISS
        return verdict(zone, "entity_change", f"{sorted(dropped)} -> {sorted(added)}", context)
    if _order_swapped(probe.entities, cached.entities):
        return verdict(Zone.MISS, "entity_order", "the same entities in another order (from/to, A vs B)", context)
    swaps = substituted_spans(cached.text, probe.text)
    if swaps:
        return verdict(Zone.MISS, "related_but_different", f"one-slot edit {swaps[:3]}", context)
    if added:
        return verdict(Zone.HALF_HIT, "added_constraint", f"new in this request: {sorted(added)}", context)
    if dropped:
        return verdict(Zone.HALF_HIT, "dropped_constraint", f"no longer asked: {sorted(dropped)}", context)
    if modifies:
        flags = sorted(f.value for f in probe.flags & MODIFY)
        return verdict(Zone.HALF_HIT, "change_detected", f"the turn modifies the request: {flags}", context)

    # 4. Similarity zones.
    if turn >= limits.hit:
        return verdict(Zone.HIT, "semantic_match", f"turn cosine {turn:.3f} >= {limits.hit}", context)
    return verdict(Zone.MISS, "similar_not_same", f"turn cosine {turn:.3f} < {limits.hit}", context)


def _order_swapped(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return len(a) >= 2 and sorted(a) == sorted(b) and list(a) != list(b)
