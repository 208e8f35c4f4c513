"""Judging one candidate entry against the current request: the rules that refuse a hit.

Vectors say "these read alike"; these rules say why reading alike is not
enough: another context, a reversed intent, another entity, a one-word swap
that makes it a different task ("请假邮件" / "投诉邮件"), two words that trade
places ("小明借了小红" / "小红借了小明"), an opposite word, a plain negation,
another term to define, an added condition.

    >>> substituted_spans("帮我写一封请假邮件", "帮我写一封投诉邮件")
    [('请假', '投诉')]
    >>> substituted_spans("怎么部署这个服务", "如何部署这个服务")
    []
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from smartcache.decide.decision import Reason, Zone
from smartcache.decide.thresholds import Thresholds
from smartcache.fingerprint import ChangeFlag, Fingerprint, has_reference, skeletons_conflict
from smartcache.fingerprint.lexicon import synonym_groups, word_opposites, words_of_kind
from smartcache.store import Entry, Scope

# Spans that may replace each other without changing what is asked (data/lexicon/*.toml).
_SYNONYMS = [frozenset(words) for words, _ in synonym_groups()]
# Groups that are the form of a question or a courtesy, not its subject: a swap between
# one of these and anything is a rephrasing.
_FORM_GROUPS = frozenset(i for i, (_, form) in enumerate(synonym_groups()) if form)
# Tokens dropped before diffing. Chinese is diffed by character, so only particles
# that are never part of a content word are dropped ("请" is not: "请假").
_FILLER = words_of_kind("filler")
_MAX_SLOT = 4   # a swapped word: up to 4 CJK characters or 4 English words; longer is a rephrasing
_TOKEN = re.compile(r"[\u3400-\u9fff\ue000-\uf8ff]|[a-z0-9_.+#'-]+", re.I)


# Chinese politeness and measure fillers, stripped as phrases before the per-character diff.
_ZH_FILLER = re.compile(r"一下|请问|麻烦你?|帮忙|帮我|给我|能不能|可不可以|可以|能否|大概|大约|一般|1个|个(?![人税性体])|是|要(?!求)|(?<=\d)[份篇封张条本首]")
# Every synonym becomes its group's placeholder character before the diff, so that
# "多长时间" / "多久" is one token on both sides, not a partial character match.
_SYNONYM_MEMBERS = sorted({m for group in _SYNONYMS for m in group}, key=len, reverse=True)
_SYNONYM_RX = re.compile("|".join(rf"\b{re.escape(m)}\b" if m.isascii() else re.escape(m) for m in _SYNONYM_MEMBERS))
_PLACEHOLDER = {m: chr(0xE000 + i) for i, group in enumerate(_SYNONYMS) for m in group}
_SHOWN = str.maketrans({chr(0xE000 + i): "|".join(sorted(group, key=len)[:2]) for i, group in enumerate(_SYNONYMS)})


@lru_cache(maxsize=65536)
def _tokens(text: str) -> tuple[str, ...]:
    """The diff's tokens of a text; memoised, since every rule of every candidate diffs the same
    request text (and tuples, so no caller can change a shared result)."""
    text = _ZH_FILLER.sub("", text.lower())
    text = _SYNONYM_RX.sub(lambda m: _PLACEHOLDER[m.group(0)], text)
    tokens = (t.strip(".'-") or t for t in _TOKEN.findall(text))     # quotes around a word are not part of it
    return tuple(_singular(t) for t in tokens if t not in _FILLER)


def _singular(token: str) -> str:
    """'tickets' and 'ticket' are one word to the diff ('status', 'bus' stay)."""
    if len(token) > 4 and token.isascii() and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def substituted_spans(a: str, b: str) -> list[tuple[str, str]]:
    """Spans that one text replaces in the other, when the two are otherwise the same
    sentence (a "minimal pair"); synonym swaps are not listed. Empty when the texts
    are rephrasings rather than one-slot edits."""
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return []
    if _common_share(ta, tb) < 0.5:
        return []
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    joiner = lambda toks: ("" if all(len(t) == 1 and t >= "\u3400" for t in toks) else " ").join(toks)
    replaced = [(i1, i2, j1, j2) for op, i1, i2, j1, j2 in matcher.get_opcodes() if op == "replace"]
    # One swapped slot is a different task; several replaced stretches are a rephrasing
    # (words reordered), which the similarity zones judge instead.
    if len(replaced) != 1:
        return []
    i1, i2, j1, j2 = replaced[0]
    if i2 - i1 > _MAX_SLOT or j2 - j1 > _MAX_SLOT:
        return []
    # A side made only of question words and synonym stand-ins ("how do i" / "what are the
    # steps to") swaps the form of the question, not its subject.
    if any(all(_is_form_word(t) for t in side) for side in (ta[i1:i2], tb[j1:j2])):
        return []
    return [(joiner(ta[i1:i2]).translate(_SHOWN), joiner(tb[j1:j2]).translate(_SHOWN))]


@dataclass(frozen=True)
class Switches:
    """Which rule families judge a candidate. All on in service; each can be turned off to
    measure what it is worth (``smartcache eval --ablate``)."""

    tags: bool = True               # skeleton, actions, entities, nouns, order, one-slot edits
    change_detection: bool = True   # negation / reversal, change flags, corrections, resets, topic switch
    context_view: bool = True       # the history scored apart from the turn


ALL_RULES = Switches()


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


# A plain Chinese 不 / 没 / 未 / 无法 before what is asked about ("不刷屏", "不冬眠的动物",
# "没飞过"): a request with one asks the opposite of the same words without it. Not
# negations: fixed words (不错, 差不多), A-not-A questions (是不是, 有没有), and complements
# of ability or result (打不开, 连不上), which complain rather than negate and are often
# worded without one.
_ZH_NOT_WORDS = re.compile(
    r"不错|不过|不同|不一样|不少|不断|不久|不然|不仅|不但|不管|不如|不止|不光|不妨|不禁|不愧|不料|不像话|"
    r"差不多|不好意思|对不起|了不起|不客气|来不及|不得不|不得了|说不定|要不|不一定|没事|没关系|没错|没想到|"
    r"打不通|行不通|走不通|(.)[不没]\1|可不可|有没|"
    r"(?<![我你他她它们])[\u4e00-\u9fff]不[了上到开动起来下去出进见着住完懂清掉]")
_ZH_NOT = re.compile(r"不|没有?|未|无法")
# Past adverbs and modals to what a negation negates ("不太上网": 上网, "不能吃": 吃).
_ZH_MODALS = re.compile(r"^(?:太|很|再|也|都|要|会|能|可以|想|用|准|许|该|应该|必)+")
_CJK_PAIR = re.compile(r"^[\u4e00-\u9fff]{2}")
# Complaints are worded with a negation and without one ("调节了不好使" / "不能调节了").
_ZH_MALFUNCTION = re.compile(r"不好使|不管用|不灵|不行|失败|坏了|故障|不了|报错|出错")


def _negations_of_shared(text: str, other: str) -> int:
    """Plain negations in ``text`` of words that ``other`` has too: "不冬眠" against "冬眠".
    One of something the other request never mentions ("顺带说一句我平时不太上网，…") is
    added background, not a reversal."""
    text = _ZH_NOT_WORDS.sub("，", text)
    count = 0
    for m in _ZH_NOT.finditer(text):
        rest = text[m.end():]
        negated = {p.group(0) for p in (_CJK_PAIR.match(rest), _CJK_PAIR.match(_ZH_MODALS.sub("", rest))) if p}
        count += any(word in other for word in negated)
    return count


def _polarity_differs(a: str, b: str) -> bool:
    """One request negates what the other asks plainly. Both negating, each its own word
    ("为什么我没微粒贷资格" / "为啥我不能体验微粒贷"), is no reversal."""
    if _ZH_MALFUNCTION.search(a) or _ZH_MALFUNCTION.search(b):
        return False
    total = lambda t: len(_ZH_NOT.findall(_ZH_NOT_WORDS.sub("，", t)))
    return total(a) % 2 != total(b) % 2 and _negations_of_shared(a, b) % 2 != _negations_of_shared(b, a) % 2


_UNRESOLVED_REFERENCE = re.compile(r"那家|这家|那个|它|\bit\b|\bthat one\b|\bthis one\b|\bthere\b")
# Flags that modify a request (rather than reverse, correct or reset it): half-hit material.
MODIFY = frozenset({ChangeFlag.ADDITION, ChangeFlag.REMOVAL, ChangeFlag.REPLACEMENT})


def judge(fp: Fingerprint, entry: Entry, turn: float, limits: Thresholds,
          switches: Switches = ALL_RULES) -> Judgement:
    """Zone for serving ``entry`` to the request ``fp`` whose turn cosine to it is ``turn``."""
    probe, cached = fp.signature, entry.signature
    eid = entry.cache_id

    def verdict(zone: Zone, code: str, detail: str, context: float | None) -> Judgement:
        return Judgement(zone, (Reason(code, detail, eid),), turn, context)

    # 1. Context gate. A global entry without a history is a context-free FAQ answer: it needs a
    # self-contained turn. One with a history (a warmed-up multi-turn scenario) needs that history.
    if not switches.context_view:
        context = None
    elif entry.scope is Scope.GLOBAL and not cached.has_context:
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
        edited = _edited_turn(probe.history_turns, cached.history_turns) if context < 1.0 else None
        if edited is not None:
            return verdict(Zone.MISS, "context_changed", f"a prior turn was edited: {edited[:60]!r}", context)
    if turn < limits.half_hit:
        return verdict(Zone.MISS, "low_similarity", f"turn cosine {turn:.3f} < {limits.half_hit}", context)

    if not switches.tags:
        return _similarity_zone(fp, entry, turn, limits, switches, context, verdict)
    # 2. Intent: a reversed ask is a different request, never a half-hit.
    if switches.change_detection and probe.negations % 2 != cached.negations % 2:
        return verdict(Zone.MISS, "intent_reversal", "one request negates what the other asks", context)
    if switches.change_detection and any(a * b < 0 for a, b in zip(probe.sides, cached.sides)):
        return verdict(Zone.MISS, "intent_reversal", "the requests ask for opposite actions", context)
    if switches.change_detection and _polarity_differs(probe.text, cached.text):
        return verdict(Zone.MISS, "negated", "one request says 不 / 没 where the other does not", context)
    if skeletons_conflict(probe.skeleton, cached.skeleton):
        return verdict(Zone.MISS, "task_skeleton", f"{probe.skeleton!r} is not {cached.skeleton!r}", context)
    if probe.actions and cached.actions and probe.actions != cached.actions:
        return verdict(Zone.MISS, "task_action", f"asks to {list(probe.actions)}, not {list(cached.actions)}", context)

    # 3. Entities: what the turn is about, with references resolved against its own context.
    mine, theirs = _align_numbers(set(probe.entities), set(cached.entities))
    added = mine - theirs - cached.context_entities
    dropped = theirs - mine - probe.context_entities
    modifies = switches.change_detection and bool(probe.flags & MODIFY) and not (cached.flags & MODIFY)
    if added and dropped:
        zone = Zone.HALF_HIT if modifies else Zone.MISS
        return verdict(zone, "entity_change", f"{sorted(dropped)} -> {sorted(added)}", context)
    swapped_nouns = _noun_swap(probe.nouns, cached.nouns)
    if swapped_nouns:
        return verdict(Zone.MISS, "noun_change", f"about {swapped_nouns[1]}, not {swapped_nouns[0]}", context)
    terms = _defined_term(cached.text), _defined_term(probe.text)
    if None not in terms and terms[0] != terms[1]:
        return verdict(Zone.MISS, "defined_term", f"the meaning of {terms[1]!r}, not of {terms[0]!r}", context)
    opposite = _opposite_swap(cached.text, probe.text)
    if opposite:     # "改成晚上出发" modifies a request, like a changed entity
        zone = Zone.HALF_HIT if modifies else Zone.MISS
        return verdict(zone, "opposite_words", f"{opposite[0]!r} became {opposite[1]!r}", context)
    if _order_swapped(probe.entities, cached.entities) and _ORDER_MATTERS.search(probe.text) \
            and _ORDER_MATTERS.search(cached.text):
        return verdict(Zone.MISS, "entity_order", "the same entities in another order (from/to, A vs B)", context)
    roles = _roles_swapped(cached.text, probe.text, (*cached.nouns, *probe.nouns))
    if roles:
        return verdict(Zone.MISS, "roles_swapped", f"{roles[0]!r} and {roles[1]!r} trade places", context)
    # A reference on one side ("that hotel" / "the Ibis") is not a swap when the named
    # side's entity is in the context: the entity checks above have already held.
    swaps = [(x, y) for x, y in substituted_spans(cached.text, probe.text)
             if not (probe.has_context and (has_reference(x) or has_reference(y)))
             and not _anaphora(x, y, cached.text, probe.text)
             and not (_is_question_words(x) or _is_question_words(y))]
    if swaps:
        return verdict(Zone.MISS, "related_but_different", f"one-slot edit {swaps[:3]}", context)
    if added:
        return verdict(Zone.HALF_HIT, "added_constraint", f"new in this request: {sorted(added)}", context)
    if dropped:
        return verdict(Zone.HALF_HIT, "dropped_constraint", f"no longer asked: {sorted(dropped)}", context)
    return _similarity_zone(fp, entry, turn, limits, switches, context, verdict)


def _similarity_zone(fp, entry, turn, limits, switches, context, verdict) -> Judgement:
    probe, cached = fp.signature, entry.signature
    if switches.change_detection and probe.flags & MODIFY and not (cached.flags & MODIFY):
        flags = sorted(f.value for f in probe.flags & MODIFY)
        return verdict(Zone.HALF_HIT, "change_detected", f"the turn modifies the request: {flags}", context)

    # 4. Similarity zones.
    if turn >= limits.hit:
        return verdict(Zone.HIT, "semantic_match", f"turn cosine {turn:.3f} >= {limits.hit}", context)
    return verdict(Zone.MISS, "similar_not_same", f"turn cosine {turn:.3f} < {limits.hit}", context)


_BARE = re.compile(r"num:(\d+(?:\.\d+)?)$")
# A quantity with a unit or a currency: "num:4day", "money:cny:5000".
_WITH_UNIT = re.compile(r"(?:num:(\d+(?:\.\d+)?)[^\d.]|money:[a-z]+:(\d+(?:\.\d+)?)$)")


def _align_numbers(mine: set[str], theirs: set[str]) -> tuple[set[str], set[str]]:
    """A bare number on one side and the same number with a unit or currency on the other
    are one quantity typed two ways ("a 4-day trip" / "for 4 days", "预算5000以内" /
    "预算不超过5000块")."""
    value = lambda m: m.group(1) or m.group(2)
    def align(a: set[str], b: set[str]) -> set[str]:
        out = set(a)
        for key in a:
            bare = _BARE.match(key)
            if bare:
                unit = next((k for k in b if _WITH_UNIT.match(k) and value(_WITH_UNIT.match(k)) == bare.group(1)), None)
                if unit:
                    out.discard(key)
                    out.add(unit)
        return out
    return align(mine, theirs), align(theirs, mine)


def _canonical_noun(noun: str) -> str:
    return _PLACEHOLDER.get(noun, noun)


def _noun_swap(mine: tuple[str, ...], theirs: tuple[str, ...]) -> tuple[list[str], list[str]] | None:
    """Nouns the cached request has that this one lacks *and* nouns this one has that the
    cached lacks: the subject was swapped ("电饭煲" -> "运动手表"). Only one side's extra
    nouns ("我的耳机" / "耳机出了故障") is a rephrasing. A noun that contains, or is
    contained in, one on the other side ("手表" / "运动手表") is the same noun."""
    a = {_canonical_noun(n) for n in mine}
    b = {_canonical_noun(n) for n in theirs}
    extra_mine = sorted(n for n in a - b if not any(n in m or m in n for m in b))
    extra_theirs = sorted(n for n in b - a if not any(n in m or m in n for m in a))
    return (extra_theirs, extra_mine) if extra_mine and extra_theirs else None


def _edited_turn(mine: tuple[str, ...], theirs: tuple[str, ...]) -> str | None:
    """A prior turn that is a near copy of its counterpart with something changed
    ("给经理写" / "给同事写"): the two conversations are about different things, however
    close their vectors. Rephrased turns (little in common) are left to the context cosine."""
    if len(mine) != len(theirs):
        return None
    for a, b in zip(mine, theirs):
        ta, tb = _tokens(a), _tokens(b)
        if ta != tb and max(_common_share(ta, tb), _common_share(tb, ta)) >= 0.4:
            return a
    return None


def _common_share(ta: list[str], tb: list[str]) -> float:
    # A synonym placeholder stands for a word, so it weighs as two characters.
    weight = lambda toks: sum(2 if "\ue000" <= t <= "\uf8ff" else 1 for t in toks)
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    common = sum(weight(ta[b.a:b.a + b.size]) for b in matcher.get_matching_blocks())
    return common / max(weight(ta), weight(tb), 1)


# Wordings in which the order of two entities carries meaning: from/to, A vs B.
_ORDER_MATTERS = re.compile(r"从.+(?:到|去|至)|飞|比|还是|\bfrom\b.+\bto\b|\bvs\.?\b|\bversus\b|\bthan\b|\bor\b|\bbetween\b|"
                            r"\bto\b.+\bfrom\b")
# Question words: a swap of one for another is a rephrasing the skeleton check already judged.
_QUESTION_WORDS = words_of_kind("question")


def _is_form_word(token: str) -> bool:
    if "\ue000" <= token[:1] <= "\uf8ff":
        return ord(token[0]) - 0xE000 in _FORM_GROUPS
    return token in _QUESTION_WORDS or token in ("这", "那", "它")


def _anaphora(x: str, y: str, text_x: str, text_y: str) -> bool:
    """'it' for a noun the same sentence already names ("I forgot my password, how do I reset it?")."""
    return (has_reference(y) and x in text_y) or (has_reference(x) and y in text_x)


def _is_question_words(span: str) -> bool:
    words = span.split() if " " in span or span.isascii() else [span]
    return all(w in _QUESTION_WORDS or "\ue000" <= w[:1] <= "\uf8ff" for w in words)


_ENGLISH_WORD = re.compile(r"[a-z][a-z'-]{2,}")
# Adjacent, joined by a conjunction, or one modifying the other ("八宝粥哪个牌子" / "那个牌子的
# 八宝粥"): a list or a compound, not two roles.
_CONJOINED = r"\s*(?:和|与|跟|及|或|、|,|，|/|\band\b|\bor\b|&|的|之|[哪那这][个种家款]|\bof\b|'s)?\s*"


def _exchange(text: str, x: str, y: str) -> str:
    pattern = (lambda w: rf"\b{re.escape(w)}\b" if w.isascii() else re.escape(w))
    return re.sub(f"{pattern(x)}|{pattern(y)}", lambda m: y if m.group(0) == x else x, text)


def _roles_swapped(a: str, b: str, nouns: tuple[str, ...]) -> tuple[str, str] | None:
    """Two words of both requests that trade places, the rest unchanged: "男生说女生可爱" /
    "女生说男生可爱", "what do Indians find annoying in foreigners" / "... foreigners ... Indians".
    Found by exchanging them in one text and seeing it become the other. Words side by side
    ("韩国电影爱人" / "韩国爱人电影") or joined by "和" / "and" ("苹果和香蕉哪个好") are a
    compound or a symmetric list: their order is no role."""
    a, b = a.lower(), b.lower()
    words = set(nouns) | (set(_ENGLISH_WORD.findall(a)) & set(_ENGLISH_WORD.findall(b)))
    words -= _FILLER | _QUESTION_WORDS
    both = sorted(w for w in words if w in a and w in b)
    if len(both) < 2 or len(both) > 12:
        return None
    ta, tb = _tokens(a), _tokens(b)
    # Two words trading places keep the words: texts that share few cannot be a swap of each
    # other (the share test below needs 0.85), so the pairwise exchanges are skipped.
    if len(set(ta) & set(tb)) < 0.5 * max(len(set(ta)), len(set(tb))):
        return None
    base = _common_share(ta, tb)
    for i, x in enumerate(both):
        for y in both[i + 1:]:
            if x in y or y in x:
                continue
            if any(re.search(f"{re.escape(p)}{_CONJOINED}{re.escape(q)}", t)
                   for p, q in ((x, y), (y, x)) for t in (a, b)):
                continue
            share = _common_share(_tokens(_exchange(a, x, y)), tb)
            if share >= 0.85 and share >= base + 0.1:
                return x, y
    return None


# A question about what a term means is about that term exactly: "初战告捷的捷是什么意思" asks
# about one character of "初战告捷", "大本命是什么意思" about another word than "本命".
# The marker must end its clause: "是指什么生肖" asks for a zodiac sign, not a meaning.
_ZH_MEANING = re.compile(r"(?:是什么意思|什么意思|是啥意思|啥意思|的意思是什么|的意思是|是指什么|指什么|"
                         r"的含义是什么|是什么含义|什么含义|的含义)(?=[啊呀呢吗嘛？?。！!~～\s,，]|$)")
_EN_MEANING = re.compile(r"\bwhat does (.+?) mean\b|\bwhat is the meaning of (.+?)(?:[?.!]|$)|"
                         r"\bmeaning of (.+?)(?:[?.!]|$)|\bdefinition of (.+?)(?:[?.!]|$)")
_CLAUSE_BREAK = re.compile(r"[，,。？?！!；;：:\s]+")
_TERM_NOISE = re.compile(r"这个词|这句话|这句|这个|那个|这|那|请问|你好|一般|都|它|的$|^的|"
                         r"[\"'“”‘’《》「」`]|^the |^a |^an ")


def _defined_term(text: str) -> str | None:
    """The term whose meaning the request asks for, or None when it asks something else
    (or only "这是什么意思", whose term is the context's)."""
    low = text.lower()
    m = _EN_MEANING.search(low)
    if m:
        term = next(g for g in m.groups() if g)
    else:
        m = _ZH_MEANING.search(low)
        if not m:
            return None
        term = _CLAUSE_BREAK.split(low[:m.start()])[-1]
    term = _TERM_NOISE.sub("", term.strip()).strip()
    return term or None


# Words whose swap for each other asks the opposite: never a rephrasing, however many other
# stretches also changed ("小货车用什么牌子的轮胎好" / "大货车轮胎什么牌子好"). Not more / less:
# a comparison is as often reworded from its other side ("A uses less than B" / "B needs more").
_OPPOSITES = word_opposites()


def _opposite_swap(a: str, b: str) -> tuple[str, str] | None:
    """A word of one request replaced by its opposite in the other."""
    ta, tb = _tokens(a), _tokens(b)
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace":
            continue
        mine, theirs = set(ta[i1:i2]), set(tb[j1:j2])
        for x in mine - theirs:
            for y in theirs - mine:
                if frozenset((x, y)) in _OPPOSITES:
                    return x, y
    return None


def _order_swapped(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return len(a) >= 2 and sorted(a) == sorted(b) and list(a) != list(b)
