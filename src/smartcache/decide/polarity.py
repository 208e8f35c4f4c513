"""Plain Chinese negation: whether one request negates what the other asks.

    >>> _polarity_differs("有哪些冬眠的动物", "有哪些不冬眠的动物")
    True
    >>> _polarity_differs("空调打不开", "空调开不了")
    False
    >>> inserted_negation("怎么不借款", "怎么借款"), inserted_negation("how do i not pay", "how do i pay")
    ('不', 'not')
    >>> inserted_negation("这个是不是真的", "这个是真的") is None
    True
"""

from __future__ import annotations

import re
from functools import lru_cache

from smartcache.decide.tokens import diff

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


@lru_cache(maxsize=4096)
def _negated_words(text: str) -> tuple[frozenset[str], ...]:
    """For each plain negation of ``text``, the words it may negate (the two characters after
    it, with and without a modal between). Memoised: one text meets many others."""
    text = _ZH_NOT_WORDS.sub("，", text)
    out = []
    for m in _ZH_NOT.finditer(text):
        rest = text[m.end():]
        out.append(frozenset(p.group(0) for p in (_CJK_PAIR.match(rest), _CJK_PAIR.match(_ZH_MODALS.sub("", rest)))
                             if p))
    return tuple(out)


def _negations_of_shared(text: str, other: str) -> int:
    """Plain negations in ``text`` of words that ``other`` has too: "不冬眠" against "冬眠".
    One of something the other request never mentions ("顺带说一句我平时不太上网，…") is
    added background, not a reversal."""
    return sum(any(word in other for word in negated) for negated in _negated_words(text))


@lru_cache(maxsize=4096)
def _plain(text: str) -> tuple[bool, int]:
    """(whether ``text`` complains of a malfunction, how many plain negations it holds)."""
    return bool(_ZH_MALFUNCTION.search(text)), len(_ZH_NOT.findall(_ZH_NOT_WORDS.sub("，", text)))


def _polarity_differs(a: str, b: str) -> bool:
    """One request negates what the other asks plainly. Both negating, each its own word
    ("为什么我没微粒贷资格" / "为啥我不能体验微粒贷"), is no reversal."""
    (broken_a, total_a), (broken_b, total_b) = _plain(a), _plain(b)
    if broken_a or broken_b:
        return False
    return total_a % 2 != total_b % 2 and _negations_of_shared(a, b) % 2 != _negations_of_shared(b, a) % 2


# A negator on its own: what one request inserts, and nothing else, to ask the opposite.
_BARE_NEGATORS = frozenset({"不", "没", "没有", "别", "未", "not", "never", "no"})
# English prefixes that make a word its opposite or absence, glued to the start of a word:
# opened / unopened, legal / illegal, connect / disconnect, activate / deactivate, smoking /
# non-smoking. Whatever else such a prefix makes (stall / install), it is another word.
_NEGATING_PREFIXES = frozenset({"un", "in", "im", "il", "ir", "dis", "de", "non", "non-", "anti", "anti-"})


def inserted_negation(a: str, b: str) -> str | None:
    """The negator one normalised request inserts into the other, every other character the
    same, or None: "不腾讯抄袭了吗" / "腾讯抄袭了吗", "how do not i …" / "how do i …", or an
    English negating prefix glued to a word ("unopened" / "opened": "un-"). Whatever
    it makes of the sentence (a reversal, or words no one means), it is not the request the
    other answered. Not inserted as a negation: the middle of an A-not-A question ("好不好"),
    or part of an English word ("no" in "know")."""
    for longer, shorter in ((a, b), (b, a)):
        if len(longer) <= len(shorter):
            continue
        ops = [op for op in diff(longer, shorter).opcodes if op[0] != "equal"]
        if len(ops) != 1 or ops[0][0] != "delete":
            continue
        _, i1, i2, _, _ = ops[0]
        word = longer[i1:i2].strip()
        if word in _NEGATING_PREFIXES and longer[i1:i2] == word:
            before, rest = longer[i1 - 1:i1], re.match(r"[a-z]*", longer[i2:]).group(0)
            if not before.isalnum() and len(rest) >= 2:     # the start of a word: un|opened, un|do
                return word.rstrip("-") + "-"
            continue
        if word not in _BARE_NEGATORS:
            continue
        start = i1 + longer[i1:i2].index(word)
        end = start + len(word)
        before, after = longer[start - 1:start], longer[end:end + 1]
        if word.isascii():
            if not (before.isalnum() or after.isalnum()):
                return word
        elif not (before and before == after):
            # A fixed word the inserted 不 makes ("不如何…" reads 不如) is no excuse: the other
            # request reads another word in its place.
            return word
    return None
