"""Whether a reset or correction marker speaks to the conversation, or about the topic.

The words that reset a conversation or correct it are everyday words: "怎么从头开始学 Python",
"如何清空回收站", "how do I start over in Stardew Valley", "我的代码报错了", "is it incorrect to
say 'less people'", "改得更正式一点" (更正 inside 更正式). Read as a reset or a correction, such a
turn is never served and ends its session's answers. But a correction missed is the worse
error, so a marker counts unless one of these known topical forms holds:

- it asks how or why to do the thing, of no one in the conversation ("游戏怎么重新开始", "how do I
  start over in Stardew Valley", "why is my answer incorrect?"); not a challenge ("怎么又错了",
  "why did you say Paris, I meant Rome") nor a yes/no question put to the assistant ("能重新开始吗",
  "can I start over?");
- it is part of another word ("报错了", "出错了", "不对劲", "对不对", "更正式", "不是的话");
- it tells of the user's own slip in the world and asks what to do about it ("合同里名字写错了，
  会影响维权吗", "我算错了吗", "I made a mistake in my tax return"), or qualifies a noun ("incorrect
  password"), or a how-to's object ("learn Python from scratch", "纠正孩子的坏习惯").

Markers that are often topical ("我问的是", "贴错了", "有误", "i misread", "but I asked for") are
written in ``tags`` so that they only match where they address the conversation.

Each reading is made on the turn's normalised text (``normalize_text``: lower case, half-width
punctuation, "——" as "--", spaces between Chinese words gone, some 一 as 1): in Chinese on the
clause that holds the marker, in English on its sentence.

    >>> speaks_to_conversation("我们重新开始吧", "reset"), speaks_to_conversation("怎么从头开始学python", "reset")
    (True, False)
    >>> speaks_to_conversation("答案错了,重新算", "correction"), speaks_to_conversation("我的代码报错了,怎么办", "correction")
    (True, False)
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache

# Clause and sentence boundaries of normalised text (a dash run or a spaced dash too).
_CLAUSE = re.compile(r"[,.;!?:\n…]+|-{2,}|\s-\s")
_SENTENCE = re.compile(r"[.;!?:\n…]+|-{2,}|\s-\s")

# Chinese: how or why something is done (not "怎么又错了", a challenge), the assistant named.
_ZH_HOW = re.compile(r"(?:怎么|怎样|如何|为什么|为啥)(?![又还])")
_ZH_TO_YOU = re.compile(r"[你您]")
_ZH_TO_US = re.compile(r"[你您]|我们|咱们|咱")
_ZH_CONVERSATION = re.compile(r"上下文|对话|之前|前面|上面|刚才|记忆|聊天内容|设定")
_ZH_HOW_TO_DO_IT = re.compile(r"\W*(?:要|该|应该)?(?:怎么|如何|怎样)(?:操作|弄|做|办|设置)")
_ZH_NOT_PART_OF = re.compile(r"对不对|不对[劲称外付应口等]|更正式|不是的话|[报出犯没]错了?")
_ZH_ASKS_WHERE = re.compile(r"(?:哪里|哪儿|什么地方|有什么|有哪些)$")
_ZH_YES_NO = re.compile(r"[吗么]\W*$|是不是")
# What to do about a slip in the world: "……写错了，会影响维权吗", "地址填错了，怎么改".
_ZH_REMEDY = re.compile(r"怎么办|怎么改|怎么处理|怎么解决|怎么补救|怎么撤回|怎么弄|怎么修改|还能改|能改吗|可以改吗|能修改吗|"
                        r"有影响|会影响|影响[^,.;!?]{0,8}吗|有效吗|能退吗|算逾期|会不会")
_ZH_SLIP_FAMILY = re.compile(r"错了?|[搞说弄]错|理解错")
# What may follow 纠正 / 更正 when it corrects the conversation: "更正一下：预算是五千".
_ZH_CORRECTS_NEXT = re.compile(r"[一1]?下|\W|$|[我你]刚才|刚才|之前|前面|上面|你")

# English: a wh-question ("what, no, …" is an interjection), the assistant or "us" named.
_EN_WH = re.compile(r"^\W*(?:(?:so|and|but|ok|okay|hi|hey|well|also|then)\W+)*"
                    r"(?:how|why|what(?!\s+i\s+(?:meant|said|asked|mean))|when|where|which|who)\b(?!\s*,)")
_EN_TO_US = re.compile(r"(?<!how do )(?<!how can )(?<!how would )(?<!what do )(?<!where do )(?<!why do )(?<!when do )"
                       r"\byou(?:r)?\b|\bwe\b|\bus\b|\blet'?s\b|\blet us\b")
_EN_WRONG_TO = re.compile(r"^\W*(?:is|was|are|were) (?:it|this|that) (?:\w+ )?(?:incorrect|wrong) to\b")
_EN_NOT_IMPERATIVE = re.compile(r"\b(?:i|we|they|he|she|people|don'?t|never|always|often|sometimes|usually|can'?t|"
                                r"cannot)\s*$")
_EN_ABOUT_THE_CHAT = re.compile(r"\b(?:last|previous|earlier|message|question|request|prompt|above|what i)\b")


@lru_cache(maxsize=512)
def _bounds(text: str, sentences: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Starts and ends of the boundaries in ``text``, once per text (a turn holds several markers)."""
    found = list((_SENTENCE if sentences else _CLAUSE).finditer(text))
    return tuple(m.start() for m in found), tuple(m.end() for m in found)


def _span(text: str, start: int, end: int, sentences: bool) -> tuple[int, int]:
    """The clause (or sentence) holding text[start:end]."""
    starts, ends = _bounds(text, sentences)
    i = bisect.bisect_right(ends, start) - 1          # the last boundary that ends at or before the marker
    left = ends[i] if i >= 0 else 0
    j = bisect.bisect_left(starts, end)
    return left, starts[j] if j < len(starts) else len(text)


def _zh_correction(text: str, start: int, end: int) -> bool:
    left, right = _span(text, start, end, False)
    clause, word = text[left:right], text[start:end]
    to_you = bool(_ZH_TO_YOU.search(clause))
    if _ZH_NOT_PART_OF.search(text, max(0, start - 1), end + 1) and not to_you:
        return False
    if word in ("纠正", "更正"):
        return to_you or bool(_ZH_CORRECTS_NEXT.match(text, end))
    if word == "不对" and _ZH_ASKS_WHERE.search(text[left:start]) and not to_you:
        return False
    if to_you:
        return True
    before = text[left:start]
    if _ZH_SLIP_FAMILY.fullmatch(word):
        if "我" in before and _ZH_YES_NO.search(clause):
            return False        # "我算错了吗", "我是不是写错了": a doubt about the user's own work
        if _ZH_HOW.search(text, end, right) or not _ZH_YES_NO.search(clause) and _ZH_REMEDY.search(text, right):
            return False        # "密码错了怎么提示", "合同里名字写错了，会影响维权吗": a slip in the world
    if word in ("不适用", "行不通") and (_ZH_YES_NO.search(clause) or _ZH_HOW.search(clause)):
        return False            # "这种方法不适用于列表吗"
    return True


def _zh_reset(text: str, start: int, end: int) -> bool:
    left, right = _span(text, start, end, False)
    clause = text[left:right]
    if _ZH_TO_US.search(clause):
        return True
    if text[start:end] == "清空" and _ZH_CONVERSATION.search(clause):
        return True             # "清空上下文，…怎么安排": the conversation is what is cleared
    if _ZH_HOW.search(clause) or (text[start:end] == "清空" and _ZH_HOW_TO_DO_IT.match(text, right)):
        return False            # "怎么从头开始学", "如何清空回收站", "清空购物车，怎么操作"
    if text[start:end].startswith(("忘记", "忘掉")) and text[left:start].endswith("我"):
        return False            # "我忘记之前的密码了": the user's memory, not the conversation
    return True


def _en_correction(text: str, start: int, end: int) -> bool:
    left, right = _span(text, start, end, True)
    sentence, word, after = text[left:right], text[start:end], text[end:right]
    if not _EN_TO_US.search(sentence) and (_EN_WH.search(sentence) or _EN_WRONG_TO.search(sentence)):
        return False            # "why is my answer incorrect?", "is it incorrect to say …"
    if word == "incorrect" and re.match(r"\s+(?!and|but|or|because|since|so|again|though|now|too|either)[a-z]", after):
        return False            # "incorrect password"
    if word == "i made a mistake" and re.match(r"\s+(?:in|on|with|when|while|during)\b", after) \
            and not _EN_ABOUT_THE_CHAT.search(" ".join(after.split()[:5])):
        return False            # "i made a mistake in my tax return"
    return True


def _en_reset(text: str, start: int, end: int) -> bool:
    left, right = _span(text, start, end, True)
    sentence, word, before = text[left:right], text[start:end], text[left:start]
    if _EN_WH.search(sentence) and not _EN_TO_US.search(sentence):
        return False            # "how do i start over in stardew valley?"
    if word == "from scratch":
        # "start over from scratch" speaks to the conversation; "learn python from scratch" does not.
        return bool(re.search(r"\b(?:start(?:ing)?|begin(?:ning)?|restart)(?: (?:over|again|all over))?\s*$", before))
    if word.startswith(("forget", "ignore", "disregard")) and _EN_NOT_IMPERATIVE.search(before):
        return False            # "i always forget everything i read"
    return True


def speaks_to_conversation(text: str, kind: str, match: re.Match[str] | None = None) -> bool:
    """Whether the marker ``match`` (of ``kind``: "reset" or "correction") in the normalised
    ``text`` resets or corrects the conversation; without ``match``, the first marker of the
    kind found in ``text``. False only for the topical forms of the module's docstring."""
    if match is None:
        from smartcache.fingerprint.tags import CORRECTION, RESET
        match = (RESET if kind == "reset" else CORRECTION).search(text)
        if match is None:
            return False
    start, end = match.span()
    if match.group(0).isascii():
        return (_en_reset if kind == "reset" else _en_correction)(text, start, end)
    return (_zh_reset if kind == "reset" else _zh_correction)(text, start, end)
