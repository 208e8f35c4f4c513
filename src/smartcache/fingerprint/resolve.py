"""Reference resolution: "那家酒店的早餐…" becomes "西湖国宾馆的早餐…" when the context names one hotel.

Resolution is deliberately timid: a reference is rewritten only when the most
recent context turn that names an entity of the referenced kind names exactly
one. Otherwise the turn stays as written, and the context gate decides.

    >>> resolve_references("那家酒店的早餐值不值得吃", ["推荐1家西湖边的酒店", "推荐西湖国宾馆,早餐丰富."])
    '西湖国宾馆的早餐值不值得吃'
"""

from __future__ import annotations

import re
from typing import Sequence

from smartcache.fingerprint.entities import Entity, extract_entities

# Referenced noun -> the suffixes an entity of that kind ends with ('' = any name or place).
_KINDS = {
    "酒店": ("酒店", "宾馆", "饭店", "旅馆", "民宿"), "宾馆": ("酒店", "宾馆", "饭店", "旅馆", "民宿"),
    "饭店": ("饭店", "酒店", "餐厅", "餐馆", "酒家"), "餐厅": ("餐厅", "餐馆", "饭店", "酒家", "饭馆"),
    "餐馆": ("餐厅", "餐馆", "饭店", "酒家", "饭馆"), "店": ("酒店", "宾馆", "饭店", "餐厅", "餐馆", "酒家", "店"),
    "景点": ("公园", "博物馆", "纪念馆", "寺", "塔", "宫", "园", "山", "湖", "景区", "古镇", "岛"),
    "景区": ("景区", "公园", "山", "湖", "古镇", "岛"), "公园": ("公园", "园"), "博物馆": ("博物馆", "纪念馆", "美术馆"),
    "报错": ("error", "exception", "错误", "异常"), "错误": ("error", "exception", "错误", "异常"),
    "error": ("error", "exception"), "exception": ("error", "exception"),
    "方案": ("方案",), "功能": ("功能",), "版本": ("版本",), "套餐": ("套餐",),
    "hotel": ("hotel", "inn", "resort"), "restaurant": ("restaurant", "bistro", "cafe"),
    "": (),
}
# Kinds of thing a demonstrative can point at whatever the name looks like ("那本书" after
# 《人类简史》, "这款手机" after 小米14): any one name of the latest naming turn.
_ANY_NAME_NOUNS = ("书", "小说", "电影", "片子", "剧", "电视剧", "动画", "歌", "游戏", "产品", "手机", "电脑", "软件",
                   "应用", "工具", "库", "框架", "插件", "车", "菜", "课程", "作品", "城市", "地方", "公司", "品牌")
_KINDS.update({noun: () for noun in _ANY_NAME_NOUNS})
_ZH_REF = re.compile(r"(?:那|这|该)(?:家|个|座|间|款|所|种|本|部|首|台|辆|道|门|篇)?"
                     r"(酒店|宾馆|饭店|餐厅|餐馆|景点|景区|公园|博物馆|方案|功能|版本|套餐|报错|错误|店|"
                     + "|".join(sorted(_ANY_NAME_NOUNS, key=len, reverse=True)) + ")"
                     r"|(?:那|这)家(?![\u4e00-\u9fff]{0,1}(?:酒店|宾馆|饭店|餐厅|餐馆|店))|它")
_EN_REF = re.compile(r"\b(?:that|this|the same) (hotel|restaurant|error|exception)\b|\b(?:that|this) one\b"
                     r"|(?:(?<=\bsolve )|(?<=\bfix ))(it)\b")
# English pronoun-like references ("for it", "that place", "there") resolve only to a
# proper-noun phrase that is the one and only one of the latest turn that has any.
# "it" as an object ("who wrote it?", "can I read PDFs on it") or before a clause break points
# back; "it" as a subject is too often a dummy ("how long does it take", "is it safe") to rewrite.
_EN_PRONOUN = re.compile(r"\b(?:that|this) (?:place|sight|attraction|museum|one|book|movie|film|game|show|song|"
                         r"product|phone|laptop|app|tool|library|car|dish|recipe|course|city|company)\b"
                         r"|(?:(?<=\bfor )|(?<=\bto )|(?<=\bat )|(?<=\bon )|(?<=\bin )|(?<=\bwith )|(?<=\babout )"
                         r"|(?<=\bof )|(?<=\bfrom ))it\b|\bit(?=\s*[?.!,]|\s*$)|\bthere\b", re.I)
_EN_POSSESSIVE = re.compile(r"\b(?:its|his|her|their)\b(?=\s+\w)", re.I)
_PROPER = re.compile(r"(?<![.!?]\s)(?<!^)\b((?:the )?[A-Z][\w'-]+(?:(?: of| de| the)? [A-Z][\w'-]+)*)")
_NOT_PROPER = {"I", "I'd", "I'm", "I'll", "I've", "Day", "Yes", "No", "Sure", "Great", "Thanks", "OK", "Don't"}


def _matches(entity: Entity, suffixes: tuple[str, ...]) -> bool:
    if entity.kind not in ("name", "place"):
        return False
    return not suffixes or entity.value.endswith(suffixes) or any(s in entity.value for s in suffixes)


def _antecedent(noun: str, context: Sequence[str]) -> str | None:
    suffixes = _KINDS.get(noun, ())
    for turn in reversed(context):
        found = [e for e in extract_entities(turn) if _matches(e, suffixes)]
        if found:
            unique = {e.value for e in found}
            return found[0].value if len(unique) == 1 else None
    return None


def resolve_references(text: str, context: Sequence[str]) -> str:
    """Rewrite noun-phrase references in ``text`` with their antecedent from ``context`` (oldest turn first)."""
    if not context:
        return text

    def zh(match: re.Match[str]) -> str:
        target = _antecedent(match.group(1) or "", context)
        return target if target else match.group(0)

    def en(match: re.Match[str]) -> str:
        noun = (match.group(1) or "").lower() or ("error" if match.group(2) else "")
        target = _antecedent(noun, context)
        if not target and noun in ("hotel", "restaurant", ""):
            target = _proper_antecedent(context)
        return target if target else match.group(0)

    text = _resolve_text_reference(text, context)
    text = _EN_REF.sub(en, _ZH_REF.sub(zh, text))
    if _EN_PRONOUN.search(text) or _EN_POSSESSIVE.search(text):
        target = _proper_antecedent(context)
        if target:
            text = _EN_PRONOUN.sub(target, text)
            text = _EN_POSSESSIVE.sub(f"{target}'s", text)
    return _resolve_bare_why(text, context)


# A bare "why?" asks about the claim just made: "为什么" after "鲸鱼不是鱼" asks why whales are not fish.
_BARE_WHY = re.compile(r"^\s*(?:为什么|为啥|为何|怎么会|咋回事|why|why is that|why not|how come|really why)\s*[?？!！.。]*\s*$", re.I)


def _resolve_bare_why(text: str, context: Sequence[str]) -> str:
    if not context or not _BARE_WHY.match(text):
        return text
    claim = context[-1].split(" … ")[-1].strip(" 。.!！?？")
    return f"{text.strip(' ?？!！.。')} {claim}" if claim else text


# A reference to a text pasted earlier ("把上面这段话润色一下", "polish the paragraph above",
# "translate it"): resolved to the instruction-and-material form of a turn that pastes it.
_ZH_TEXT_REF = re.compile(r"(?:上面|上述|刚才|前面)的?(?:这|那)?(?:段|篇)(?:话|文字|内容)?|上面的(?:文字|内容)|(?:这|那)段(?:话|文字)")
_EN_TEXT_REF = re.compile(r"\b(?:the (?:paragraph|text|draft) above|(?:that|this|my) (?:draft|paragraph|text)|the above)\b"
                          r"|(?:(?<=\btranslate )|(?<=\bpolish )|(?<=\bmake )|(?<=\brewrite )|(?<=\bshorten )"
                          r"|(?<=\bsummarise )|(?<=\bsummarize ))it\b", re.I)
_MATERIAL = re.compile(r"[:：]\s*(.{15,})$", re.S)


def _resolve_text_reference(text: str, context: Sequence[str]) -> str:
    if _MATERIAL.search(text):          # the material is in the turn itself
        return text
    zh = _ZH_TEXT_REF.search(text)
    en = None if zh else _EN_TEXT_REF.search(text)
    if not (zh or en):
        return text
    material = next((m.group(1).strip() for turn in reversed(context) for m in [_MATERIAL.search(turn)] if m), None)
    if material is None:
        return text
    if zh:
        return _ZH_TEXT_REF.sub("这段话", text, count=1).rstrip("。.!！?？ ") + ":" + material
    return _EN_TEXT_REF.sub("this text", text, count=1).rstrip(".!? ") + ": " + material


def _proper_antecedent(context: Sequence[str]) -> str | None:
    """The one proper-noun phrase of the latest turn that names any; when that turn names
    several ("Elon Musk is the CEO of Tesla"), the one of the user's question before it.
    A question that names two ("Compare Lisbon and Porto") leaves "there" unresolved,
    whatever the answer's first word hides (sentence-initial names are not counted)."""
    found = [_distinct_proper(turn) for turn in list(context)[-2:]]   # only the last exchange
    if len(found) == 2 and len(found[0]) > 1:
        return None
    for phrases in found[::-1]:
        if len(phrases) == 1:
            return next(iter(phrases))
    return None


def _distinct_proper(turn: str) -> list[str]:
    phrases = [p for p in _PROPER.findall(turn) if p.split()[-1] not in _NOT_PROPER and p not in _NOT_PROPER]
    # "the Tower of London … London": a phrase inside another is the same thing.
    return list(dict.fromkeys(p for p in phrases if not any(p != q and p.removeprefix("the ") in q for q in phrases)))
