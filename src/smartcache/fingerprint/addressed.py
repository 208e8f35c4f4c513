"""Whether a reset or correction marker speaks to the conversation, or about the topic.

The words that reset a conversation or correct it are everyday words: "怎么从头开始学 Python",
"如何清空回收站", "how do I start over in Stardew Valley", "我的代码报错了", "is it incorrect to
say 'less people'", "改得更正式一点" (更正 inside 更正式). Read as a reset or a correction, such a
turn is never served and ends its session's answers. A marker speaks to the conversation when
it stands as its own predicate ("我们重新开始吧", "let's start over", "不对，是周四", "that's
wrong", "correction: …"); it speaks about the topic when it

- sits in a question about something else ("游戏怎么重来", "why is my answer incorrect?",
  "这道题我算错了吗", "是不是只能倒掉重新开始？"), unless the question is put to the assistant
  or to "us" ("can we start over?", "你是不是说错了");
- takes an object that is not the conversation ("从头开始学", "重来一局", "清空购物车",
  "start over in Stardew Valley", "a mistake in my tax return");
- tells of a slip in something else, and restates nothing ("合同里房东的名字写错了一个字，会影响
  我维权吗" against "我写错了，体重是 60 公斤", "我前面贴的报错贴错了，真正的报错是…");
- is part of another word ("报错了", "出错了", "不对劲", "对不对", "更正式").

Each reading is made on the turn's normalised text (``normalize_text``: lower case, half-width
punctuation, some 一 as 1): in Chinese on the clause that holds the marker, in English on its
sentence (a question's commas do not end it: "would a reinstall, starting from scratch, help?").

    >>> speaks_to_conversation("我们重新开始吧", "reset"), speaks_to_conversation("怎么从头开始学python", "reset")
    (True, False)
    >>> speaks_to_conversation("不对,是周4出发", "correction"), speaks_to_conversation("我的代码报错了,怎么办", "correction")
    (True, False)
"""

from __future__ import annotations

import re

# Clause boundaries of normalised text (a spaced dash too: "let's start over - forget it"),
# and sentence boundaries (English questions are read whole).
_CLAUSE = re.compile(r"[,.;!?:\n…]+|\s[-–—]+\s|—+")
_SENTENCE = re.compile(r"[.;!?:\n…]+|\s[-–—]+\s|—+")

# A question about something: a question word, or a closing question particle.
_ZH_QUESTION = re.compile(r"怎么|怎样|如何|为什么|为啥|什么(?![都也])|哪是否|是不是|能否|能不能|可不可以|多少|多久|几[个次天种]|[吗么]\W*$")
_EN_QUESTION = re.compile(
    r"^\W*(?:(?:so|and|but|ok|okay|hi|hey|well|also|then)\W+)*"
    r"(?:how|why|what(?!\s+i\s+(?:meant|said|asked|mean))|when|where|which|who|would|is|are|was|were|am|do|does|did|"
    r"can|could|should|will|shall|may|might|has|have)\b")
# Put to the assistant, or to "us": "can we start over?", "你是不是说错了", "could you forget that?".
_ZH_TO_US = re.compile(r"[你您]|我们|咱们|咱")
_EN_TO_US = re.compile(r"\b(?:(?:can|could|would|will) you|we|us|let'?s|let us)\b")
# What names the conversation itself: "清空上面的内容", "之前说的全部作废", "重新开始对话".
_ZH_CONVERSATION = re.compile(r"之前|前面|刚才|刚刚|上面|以上|上下文|对话|聊天内容|记忆|说过的|说的|聊的|话题")
# What comes before a marker that opens its clause: interjections, who speaks, when.
_ZH_OPENING = re.compile(r"(?:[哦啊嗯呃唉哎额噢诶]|不好意思|抱歉|对不起|sorry|oops|又|都|全|也|其实|刚才|刚刚|前面|之前|上面|"
                         r"我|你|您|[说打写贴发输填选记听看算答译讲问搞弄]|理解|翻译|回答)*")
# A restatement after the slip: "是 13 岁", "不是苹果", "真正的报错是这个", "我问的是…".
_ZH_RESTATED = re.compile(r"(?:^|[\W])(?:其实|实际上?|应该|正确的?|真正的?[^,.;:!?]{0,8})?是|不是|我(?:要|问|说|想)的是|改成|改为|换成")

# What may follow a standalone reset word: the end, a particle, "一下", the conversation, or a
# request to the assistant ("重新开始帮我规划", "重新开始一个新话题"); not an object ("学", "一局").
_ZH_ALONE = re.compile(r"(?:\W|$|[吧啊呀了呗哈嘛]|好了|[一1][下遍次](?:\W|$|吧)|对话|聊天|这次对话|[一1]个新|新的|帮|给我|请|聊|问|说)")
_ZH_RESET_STANDALONE = re.compile(r"重新开始|从头开始|从头再?来过?|重新来过?|从零开始|重来")
_ZH_RESET_OF_CONVERSATION = re.compile(r"清空|作废|[都全]忘")
# A marker inside another word.
_ZH_NOT_PART_OF = re.compile(r"对不对|不对[劲称外付应口等我他她它人]|更正式|不是的话|[报出犯没]错了?")
# What puts an English reset or slip in another place: "start over in Stardew Valley", "a mistake on my return".
_EN_OBJECT_AFTER = re.compile(r"^\s+(?:in|on|at|after|with|as|from|for|during|when|while)\b(?!\s+scratch)")
_EN_SLIP_ELSEWHERE = re.compile(r"\b(?:in|on|at) (?:my|the|a|an|our|his|her|their) \w+")


def _span(text: str, start: int, end: int, bounds: re.Pattern[str]) -> tuple[str, int, int, str]:
    """The clause (or sentence) holding text[start:end], the marker's place in it, and the
    boundary after it."""
    left = 0
    for m in bounds.finditer(text, 0, start):
        left = m.end()
    right = bounds.search(text, end)
    stop = right.start() if right else len(text)
    return text[left:stop], start - left, end - left, right.group(0) if right else ""


def _zh_asks_about_something(clause: str, start: int, after: str) -> bool:
    """A question in the marker's clause, not put to the assistant or to "us"; a clause closed
    by "?" is one unless the marker opens it ("不对吧?", "错了?")."""
    if _ZH_TO_US.search(clause):
        return False
    opens = not clause[:start].strip() or _ZH_OPENING.fullmatch(clause[:start].strip()) is not None
    return bool(_ZH_QUESTION.search(clause)) or ("?" in after and not opens)


def _en_asks_about_something(sentence: str) -> bool:
    return bool(_EN_QUESTION.search(sentence)) and not _EN_TO_US.search(sentence)


def _zh_reset(clause: str, start: int, end: int) -> bool:
    word, after = clause[start:end], clause[end:]
    if _ZH_RESET_OF_CONVERSATION.match(word):
        return bool(_ZH_CONVERSATION.search(clause))
    if _ZH_RESET_STANDALONE.fullmatch(word):
        return bool(_ZH_TO_US.search(clause[:start])) or after == "" or bool(_ZH_ALONE.match(after))
    return True     # 忘掉之前, 忽略上面, 新对话, 重置对话: they name the conversation


def _en_reset(sentence: str, start: int, end: int) -> bool:
    word, after, before = sentence[start:end], sentence[end:], sentence[:start]
    if word == "from scratch":
        # "start over from scratch" speaks to the conversation; "make it from scratch" does not.
        return bool(re.search(r"\b(?:start(?:ing)?|begin(?:ning)?|restart)(?: (?:over|again|all over))?\s*$", before))
    if re.search(r"\b(?:conversation|chat|context|session)\b", word):
        return True     # it names the conversation: "i'd like to wipe this conversation"
    if word.startswith(("forget", "ignore", "disregard", "scrap", "drop", "throw", "wipe")):
        # An imperative: not "i always forget that", "don't forget everything", "to ignore all previous".
        return not re.search(r"\b(?:i|we|they|he|she|people|to|don'?t|never|always|often|sometimes|usually|"
                             r"will|would|might|can'?t|cannot|also)\s*$", before)
    # "start over in Stardew Valley" is about a game; "let's start over with a new plan" is not.
    return bool(_EN_TO_US.search(sentence)) or not _EN_OBJECT_AFTER.match(after)


def _zh_correction(text: str, clause: str, start: int, end: int, rest: str) -> bool:
    word = clause[start:end]
    if word.endswith("错") or word.endswith("错了") or word == "有误":
        # A slip: the speaker's own or the assistant's ("我写错了", "你算错了", "抱歉打错了"), or
        # anything's, once restated ("…贴错了，真正的报错是这个"); not a slip in a contract.
        prefix = clause[:start] + (word[:-2] if word.endswith("错了") else word[:-1] if word.endswith("错") else "")
        return _ZH_OPENING.fullmatch(prefix.strip()) is not None or bool(_ZH_RESTATED.search(rest))
    if word in ("纠正", "更正"):
        return bool(re.match(r"(?:[一1]下)?(?:\W|$|[我你吧])", clause[end:]))
    return True


def _en_correction(sentence: str, start: int, end: int) -> bool:
    word, before, after = sentence[start:end], sentence[:start], sentence[end:]
    if word == "incorrect":
        # "incorrect, it is …" or "your answer is incorrect"; not "incorrect password".
        return not before.strip() or bool(re.search(
            r"\b(?:that|this|it|which|you|your \w+(?: \w+)?)(?:'s|'re| is| are| was| were)\s*$", before))
    if word == "correction":
        return not after.strip() or bool(re.match(r"\s*[-–—:,]", after))
    if word.startswith(("i made a mistake", "i mis")):
        # "I made a mistake, the meeting is at 3" / "I made a mistake in my tax return".
        return not _EN_OBJECT_AFTER.match(after) and not _EN_SLIP_ELSEWHERE.search(after)
    return True


def speaks_to_conversation(text: str, kind: str, match: re.Match[str] | None = None) -> bool:
    """Whether the marker ``match`` (of ``kind``: "reset" or "correction") in the normalised
    ``text`` resets or corrects the conversation; without ``match``, the first marker of the
    kind found in ``text``. False where it is about the topic (the module's docstring)."""
    if match is None:
        from smartcache.fingerprint.tags import CORRECTION, RESET
        match = (RESET if kind == "reset" else CORRECTION).search(text)
        if match is None:
            return False
    if _ZH_NOT_PART_OF.search(text, max(0, match.start() - 1), match.end() + 1):
        return False
    if match.group(0).isascii():
        sentence, start, end, _ = _span(text, match.start(), match.end(), _SENTENCE)
        if _en_asks_about_something(sentence):
            return False
        return _en_reset(sentence, start, end) if kind == "reset" else _en_correction(sentence, start, end)
    clause, start, end, after = _span(text, match.start(), match.end(), _CLAUSE)
    if _zh_asks_about_something(clause, start, after):
        return False
    if kind == "reset":
        return _zh_reset(clause, start, end)
    return _zh_correction(text, clause, start, end, text[match.end():])
