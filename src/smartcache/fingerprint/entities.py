"""Active entities: the names, numbers, dates and identifiers a request is about.

Extraction runs on case-preserving normalised text (so "八千" is already
"8000"), and every value is canonical, so two requests about the same thing
yield equal entities and a changed number or name shows up as a set difference.

    >>> [e.key for e in extract_entities("周末去杭州玩3天,预算5000元以内")]
    ['name:杭州', 'num:3day', 'money:cny:5000']
    >>> [e.key for e in extract_entities("Enable feature A in config.yaml for v2.1")]
    ['name:a', 'code:config.yaml', 'version:2.1']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CJK = "\u3400-\u4dbf\u4e00-\u9fff"


@dataclass(frozen=True, order=True)
class Entity:
    """One entity: its kind and canonical value. ``key`` is what comparisons use."""

    kind: str
    value: str

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.value}"


# Units after a number that make it a quantity worth comparing; value 1 with a
# generic classifier ("1个", "a hotel") is dropped, it rarely carries a constraint.
_UNITS = (
    "小时|分钟|公里|公斤|千克|厘米|星期|天|晚|夜|人|位|个|家|间|张|本|次|年|月|号|秒|岁|斤|克|米|周|"
    "条|份|杯|瓶|台|件|种|套|层|楼|站|倍|折|成|遍|部|首|篇|封|页|行|段|句|题|道|项|步|辆|星|字|%|"
    "gb|mb|kb|tb|ms|km|kg|cm|mm|m|g|s|h|"
    "days?|nights?|people|persons?|guests?|adults?|kids?|children|hours?|minutes?|mins?|seconds?|weeks?|"
    "months?|years?|items?|rooms?|stars?|pages?|words?|lines?|steps?|times|tickets?|cores?|gpus?|"
    "percent|miles?|meters?|replicas?|nodes?|points?|paragraphs?|sentences?|bullets?|examples?|ways?|tips?|options?|"
    "hrs?|钟头"
)
# One canonical spelling per unit, so "2 hours" / "2 hrs" / "2h" and "3天" / "3日" compare equal.
_UNIT_CANON = {u: canon for canon, units in {
    "h": "小时 钟头 h hr hrs hour hours", "min": "分钟 min mins minute minutes", "s": "秒 s second seconds",
    "day": "天 day days", "night": "晚 夜 night nights", "week": "周 星期 week weeks", "month": "月 month months",
    "year": "年 year years", "people": "人 位 people person persons guest guests", "km": "公里 km",
    "kg": "公斤 千克 kg", "%": "% percent",
}.items() for u in units.split()}
# English number words before a unit ("three people", "two hours"); alone they are too often
# pronouns or idioms ("this one", "one of them") to read as numbers.
_EN_NUMBERS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve "
                                           "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".split())}
_EN_NUMBERS.update({"thirty": 30, "forty": 40, "fifty": 50, "a couple of": 2, "a dozen": 12})
_GENERIC_CLASSIFIERS = {"个", "种", "件", "条", "份", "次", "位", "本", "篇", "封", "段", "句", "道", "项", "家", "间", "张", "部", "首", "台", "辆", "套"}
# (?<!\d) before a leading \d+: linear time on a long digit run (see context.normalize).
_MONEY = [
    (re.compile(r"\$\s?(\d+(?:\.\d+)?)"), "usd"),
    (re.compile(r"(?<!\d)(\d+(?:\.\d+)?)元"), "cny"),
    (re.compile(r"(?<!\d)(\d+(?:\.\d+)?)\s*(?:欧元|eur|euros?)\b", re.I), "eur"),
    (re.compile(r"€\s?(\d+(?:\.\d+)?)"), "eur"),
    (re.compile(r"(?<!\d)(\d+(?:\.\d+)?)\s*(?:英镑|gbp|pounds?)\b", re.I), "gbp"),
    (re.compile(r"£\s?(\d+(?:\.\d+)?)"), "gbp"),
    (re.compile(r"(?<!\d)(\d+(?:\.\d+)?)\s*(?:日元|jpy|yen)\b", re.I), "jpy"),
]
_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec"
_MONTH_NUM = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DATES = [
    (re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})"), lambda m: f"{int(m[1])}-{int(m[2]):02d}-{int(m[3]):02d}"),
    (re.compile(r"(?:(\d{4})年)?(\d{1,2})月(\d{1,2})[日号]"), lambda m: f"{m[1] or '*'}-{int(m[2]):02d}-{int(m[3]):02d}"),
    (re.compile(rf"\b({_MONTHS})[a-z]*\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", re.I),
     lambda m: f"*-{_MONTH_NUM[m[1].lower()[:4] if m[1].lower().startswith('sept') else m[1].lower()[:3]]:02d}-{int(m[2]):02d}"),
    (re.compile(r"周(\d)"), lambda m: f"weekday{m[1]}"),
    (re.compile(rf"\b({'|'.join(_WEEKDAYS)})\b", re.I), lambda m: f"weekday{_WEEKDAYS.index(m[1].lower()) + 1}"),
]
# Times of day: "7pm", "19:30", "晚上7点半" -> "time:19:30".
_TIME_EN = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)(?![a-z])|\b(\d{1,2}):(\d{2})\b", re.I)
_TIME_ZH = re.compile(r"(上午|早上|中午|下午|晚上|傍晚)?(\d{1,2})[点时](?:(半)|(\d{1,2})分?)?")


def _time_key(hour: int, minute: int, afternoon: bool) -> str:
    if afternoon and hour < 12:
        hour += 12
    return f"{hour % 24:02d}:{minute:02d}"


# re.ASCII throughout: with Unicode \\w a CJK character counts as a word character,
# so "版本3.11" or "订单48213" would have no word boundary before the number.
_VERSION = re.compile(r"(?<![\w.])v?(\d+\.\d+(?:\.\d+)*)(?![\w.]*\d)", re.ASCII)
_CODE = [re.compile(p, re.ASCII) for p in (
    r"`([^`\n]{1,60})`",
    r"(?<![\w.])(--?[a-zA-Z][\w-]+)",                                 # CLI flags
    r"\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\(\))",                        # calls: foo(), a.b()
    r"\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\b",                           # dotted paths, file names
    r"\b([a-z]+_[a-z0-9_]+)\b",                                         # snake_case
    r"\b([a-z]+[A-Z][A-Za-z0-9]*)\b",                                   # camelCase
    r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]+|E\d{3,5}|[A-Z]{2,}\d+)\b",            # ERR_CODES, E1234
)]
# Chinese proper names by their suffix; the body may not contain function characters.
_ZH_NAME_SUFFIX = ("大酒店|酒店|宾馆|饭店|旅馆|民宿|餐厅|餐馆|酒家|饭馆|公园|博物馆|纪念馆|美术馆|寺|塔|景区|大厦|广场|"
                   "商场|购物中心|路|街|大街|胡同|站|机场|大学|医院|银行|公司|中心|湖|山|岛|古镇|故居|楼|宫|园|门(?!票)|桥|"
                   "方案|功能|版本|套餐|系统|模块|插件|模式|服务|基地|博物院|院|祠|庙|巷子|馆")
_STOP_CHARS = "的了着过和与或及在是有去到从把被让给对向往这那哪些个家位种么什怎吗呢吧啊呀请帮我你他她它们想要会能可以就都也还再很太最更多少几每荐绍订住找选逛玩看问"
_ZH_SUFFIX = re.compile(f"(?:{_ZH_NAME_SUFFIX})")
# Brand names with 家 in them ("如家酒店"): 家 is otherwise a function character ("一家酒店").
_ZH_JIA_NAME = re.compile(rf"([^{_STOP_CHARS}一二两三四五六七八九十几某各\W\d]{{1,3}}家(?:酒店|宾馆|饭店|餐厅|酒家|客栈))")
# Quantity and politeness words a name never starts with ("推荐一下北京市中心的酒店").
_ZH_NAME_LEAD = re.compile(r"^(?:一下|一些|一家|一个|几家|有些|附近|部署|迁移|调试|开启|使用|用|查看|申请|修改|关闭|升级|重启|配置)+")
_ZH_RUN = re.compile(rf"[{_CJK}]+")
_PLACES = tuple(
    "北京 上海 天津 重庆 杭州 苏州 南京 广州 深圳 成都 西安 武汉 长沙 厦门 青岛 大连 沈阳 哈尔滨 昆明 大理 丽江 三亚 海口 "
    "桂林 拉萨 乌鲁木齐 兰州 郑州 济南 合肥 福州 南昌 贵阳 南宁 太原 石家庄 呼和浩特 宁波 无锡 香港 澳门 台北 东京 大阪 "
    "首尔 曼谷 新加坡 巴黎 伦敦 纽约 西湖 故宫 长城 颐和园 天安门 外滩 鼓浪屿 黄山 泰山 张家界 九寨沟 迪士尼".split()
)
_PLACE = re.compile("|".join(sorted(map(re.escape, _PLACES), key=len, reverse=True)))
_LATIN_IN_ZH = re.compile(rf"(?:(?<=[{_CJK}])|(?<=[\s,.!?:;(])|^)([A-Za-z][A-Za-z0-9+#._-]*)(?=[{_CJK}\s,.!?:;)]|$)")
_CAPITALISED = re.compile(r"(?<=[a-z0-9,;)] )([A-Z][a-zA-Z0-9]+(?:\s[A-Z][a-zA-Z0-9]+)*)")
_SINGLE_CAP = re.compile(r"(?<![\w'])([A-Z])(?![\w'])")
_QUOTED = re.compile(r'"([^"\n]{1,30})"')
_NUM_UNIT = re.compile(rf"(?<![\w.])(\d+(?:\.\d+)?)(?:\s*-\s*|\s*)(?:个(?=小时|月|星期|钟头|人))?({_UNITS})(?!(?<=[a-z])[a-z])",
                       re.I | re.ASCII)
_WORD_UNIT = re.compile(rf"\b({'|'.join(sorted(_EN_NUMBERS, key=len, reverse=True))})[- ]({_UNITS})\b", re.I)
_PARTY = re.compile(r"(?<![\w.])(\d+) of us\b", re.I)        # "3 of us" = 3 people
# The length an answer is asked in: "用一句话回答", "写三段话", "两段文字". Only before 话 / 文字
# are 句 and 段 a length ("过一段时间" is a while, "问一句" a politeness); there even 1 is a
# constraint, in the same units as "one sentence" / "three paragraphs".
_TEXT_LENGTH = re.compile(r"(?<![\w.第])(\d+)\s*(句|段)(?=话|文字)", re.ASCII)
_TEXT_LENGTH_UNIT = {"句": "sentence", "段": "paragraph"}
_ACRONYM = re.compile(r"\b([A-Z][A-Z0-9]{1,9}|[A-Z][a-z]+[A-Z][A-Za-z0-9]*)\b")   # UPS, HTTPS, FedEx, GitHub: names anywhere
_BARE_NUM = re.compile(r"(?<![\w.$])(\d+(?:\.\d+)?)(?![\w.]|\.\d)", re.ASCII)
# Style and document kind: what a writing request produces. "formal" / "casual" or
# "weekly report" / "event announcement" are different requests, however alike the words.
_STYLE = re.compile(r"正式|轻松|简洁|幽默|委婉|礼貌|口语化|活泼|严肃|书面|"
                    r"\b(?:formal|casual|concise|friendly|polite|humorous|informal|playful|serious)\b", re.I)
# The register each style names. Two requests whose styles share no register ask for
# different texts ("formal" / "casual", "简洁" / "正式"); words of one register ("casual" /
# "friendly" / "幽默", "polite" / "formal" / "委婉") are one style, so a rewording that trades
# them is not a change. Kept coarse on purpose: only a register against another is a veto.
_REGISTERS = {**dict.fromkeys(("formal", "正式", "书面", "serious", "严肃", "polite", "礼貌", "委婉"), "formal"),
              **dict.fromkeys(("casual", "informal", "口语化", "轻松", "friendly", "humorous", "幽默", "playful",
                               "活泼"), "casual"),
              **dict.fromkeys(("concise", "简洁"), "concise")}
_DOC_HEAD = (r"(?:email|e-mail|report|notes|review|description|announcement|letter|invitation|memo|proposal|"
             r"summary|post|message|essay|resume|newsletter)")
_DOC_EN = re.compile(rf"\b((?:[a-z]+[- ])?[a-z]+[- ]{_DOC_HEAD})\b", re.I)
_DOC_ZH = re.compile(r"(?:^|(?<=[的封份篇个写给草]))([^的\W\d]{2,6}?)的?(邮件|周报|日报|月报|通知|纪要|介绍|总结|简历|文案|报告|说明|邀请函|短信)")
_DOC_NOT = frozenset("a an the my your our this that write draft compose some about around of i m".split())
# Programming terms Chinese users write in English: words with a Chinese equivalent, not names.
_TERMS = frozenset("commit list tuple dict dictionary branch merge repo repository bug".split())
_EN_STOP_CAPS = {"I", "I'm", "I'd", "I've", "I'll", "OK", "Please", "Thanks", "Hi", "Hello"}


def _canonical_unit(unit: str) -> str:
    """'hours' -> 'h', '天' -> 'day'; units without a synonym keep their singular spelling."""
    unit = unit.lower()
    if unit in _UNIT_CANON:
        return _UNIT_CANON[unit]
    return unit.rstrip("s") if len(unit) > 3 and unit.endswith("s") else unit


def _zh_names(text: str) -> list[tuple[int, int]]:
    """Spans of Chinese proper names: within each run of CJK characters between
    function characters, the longest stretch that ends in a name suffix
    ("推荐入住西湖国宾馆" -> "西湖国宾馆", not "西湖")."""
    spans = []
    for run in _ZH_RUN.finditer(text):
        piece_start = run.start()
        for piece in re.split(f"([{_STOP_CHARS}])", run.group(0)):
            if len(piece) >= 2 and piece not in _STOP_CHARS:
                ends = [m.end() for m in _ZH_SUFFIX.finditer(piece) if m.start() > 0]
                if ends:
                    end = min(max(ends), 12)
                    lead = _ZH_NAME_LEAD.match(piece)
                    start = lead.end() if lead else 0
                    place = _PLACE.search(piece, start, end)
                    if place and place.start() > start:   # a known place starts the name
                        start = place.start()
                    if end - start >= 2:
                        spans.append((piece_start + start, piece_start + end))
            piece_start += len(piece)
    return spans


def _is_zh(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


class _Claims:
    """Entities found so far, and the spans of text they claimed: a span goes to the first
    extractor that matches it, so the order of the extractors is their precedence."""

    def __init__(self) -> None:
        self.found: list[tuple[int, Entity]] = []
        self.taken: list[tuple[int, int]] = []

    def take(self, start: int, end: int, entity: Entity) -> None:
        if any(s < end and start < e for s, e in self.taken):
            return
        self.taken.append((start, end))
        self.found.append((start, entity))

    def block(self, start: int, end: int) -> None:
        """Claim a span for no entity, so that no later extractor reads it."""
        self.taken.append((start, end))

    def in_order(self) -> list[Entity]:
        """Each entity once, in order of first appearance."""
        self.found.sort(key=lambda item: item[0])
        seen: set[Entity] = set()
        ordered = []
        for _, entity in self.found:
            if entity not in seen:
                seen.add(entity)
                ordered.append(entity)
        return ordered


def _money_dates_times(text: str, claims: _Claims) -> None:
    for pattern, cur in _MONEY:
        for m in pattern.finditer(text):
            claims.take(m.start(), m.end(), Entity("money", f"{cur}:{float(m[1]):g}"))
    for pattern, fmt in _DATES:
        for m in pattern.finditer(text):
            claims.take(m.start(), m.end(), Entity("date", fmt(m)))
    for m in _TIME_EN.finditer(text):
        if m[4]:
            claims.take(m.start(), m.end(), Entity("time", _time_key(int(m[4]), int(m[5]), False)))
        else:
            afternoon = m[3].lower().startswith("p")
            claims.take(m.start(), m.end(), Entity("time", _time_key(int(m[1]), int(m[2] or 0), afternoon)))
    for m in _TIME_ZH.finditer(text):
        minute = 30 if m[3] else int(m[4] or 0)
        claims.take(m.start(), m.end(), Entity("time", _time_key(int(m[2]), minute, m[1] in ("下午", "晚上", "傍晚"))))


def _codes_versions(text: str, claims: _Claims) -> None:
    for pattern in _CODE:
        for m in pattern.finditer(text):
            value = m[1]
            if _VERSION.fullmatch(value):
                continue
            claims.take(m.start(1), m.end(1), Entity("code", value.lower()))
    for m in _VERSION.finditer(text):
        claims.take(m.start(), m.end(), Entity("version", m[1]))


def _numbers(text: str, claims: _Claims) -> None:
    for m in _PARTY.finditer(text):
        claims.take(m.start(), m.end(), Entity("num", f"{int(m[1])}people"))
    for m in _TEXT_LENGTH.finditer(text):
        claims.take(m.start(), m.end(), Entity("num", f"{int(m[1])}{_TEXT_LENGTH_UNIT[m[2]]}"))
    for m in _NUM_UNIT.finditer(text):
        value, unit = float(m[1]), m[2].lower()
        if value == 1 and unit in _GENERIC_CLASSIFIERS:
            claims.block(m.start(), m.end())
            continue
        # "3个" / "3种" count the same 3 as a bare "3": a generic classifier is no unit.
        unit = "" if unit in _GENERIC_CLASSIFIERS else _canonical_unit(unit)
        claims.take(m.start(), m.end(), Entity("num", f"{value:g}{unit}"))
    for m in _WORD_UNIT.finditer(text):
        value, unit = _EN_NUMBERS[m[1].lower()], m[2].lower()
        if value != 1 or unit not in _GENERIC_CLASSIFIERS:
            claims.take(m.start(), m.end(), Entity("num", f"{value:g}{_canonical_unit(unit)}"))
    for m in _BARE_NUM.finditer(text):
        claims.take(m.start(), m.end(), Entity("num", f"{float(m[1]):g}"))


def _styles_documents(text: str, claims: _Claims) -> None:
    for m in _STYLE.finditer(text):
        claims.take(m.start(), m.end(), Entity("style", m[0].lower()))
    for m in (_DOC_EN.finditer(text) if not _is_zh(text) else ()):
        words = [w for w in re.split(r"[- ]", m[1].lower()) if w not in _DOC_NOT]
        if len(words) >= 2 and not words[0].endswith("ing"):      # "making notes" is not a document
            claims.take(m.start(1), m.end(1), Entity("doc", " ".join(words)))
    for m in (_DOC_ZH.finditer(text) if _is_zh(text) else ()):
        body = re.sub(r"^(?:一封|一份|一篇|一个|如何|怎么|怎样|写好|写|给|帮我|起草|发给)+", "", m[1])
        if len(body) >= 2:
            claims.take(m.start(), m.end(), Entity("doc", body + m[2]))


def register_of(style: str) -> str:
    """The register a style entity's value names ("informal" -> "casual")."""
    return _REGISTERS.get(style.lower(), style.lower())


# A style asked for less of, or not at all ("less formal", "not formal", "non-formal", "too
# formal", "tone down the formal", "不要正式", "别太正式", "太过正式"): the register opposite it,
# for the plain formal and casual words; any other style so asked names no register. "Not
# formal enough" / "不够正式" asks for more. English is read in the clause before the word;
# Chinese only right before it (不 and 太 are too common further off: "不太长的信改得正式").
_LESS_EN = re.compile(r"\b(?:less|not|non|nothing|no need|without|too|overly|tone down|drop|avoid|never)\b|n't\b",
                      re.I)
_LESS_ZH = re.compile(r"(?:太|过于|太过|那么|这么)$|(?:不要|不用|不必|无需|别|没有?|不)[\u4e00-\u9fff]{0,4}$")
_CLAUSE_END = re.compile(r"[,.;:!?，。；：！？、]")
_ENOUGH_AFTER = re.compile(r"^\s*enough\b", re.I)
_OPPOSITE_STYLE = {**dict.fromkeys(("formal", "正式", "书面", "serious", "严肃"), "casual"),
                   **dict.fromkeys(("casual", "informal", "口语化", "轻松"), "formal")}


def _asked_less(text: str, start: int, end: int) -> bool:
    """Whether the style word at text[start:end] is asked for less of, or not at all."""
    if _is_zh(text[start:end]):
        before = _CLAUSE_END.split(text[max(0, start - 8):start])[-1]
        return bool(_LESS_ZH.search(before)) and not before.endswith("不够")
    before = _CLAUSE_END.split(text[max(0, start - 24):start])[-1]
    return bool(_LESS_EN.search(before)) and not _ENOUGH_AFTER.search(text[end:end + 8])


def style_register(text: str) -> frozenset[str] | None:
    """The registers of the styles a text asks for; None when one is asked for less of, or not
    at all, and has no opposite register ("less concise" asks for no named style).

        >>> sorted(style_register("make it more formal and concise"))
        ['concise', 'formal']
        >>> style_register("改得口语化、轻松一点") == style_register("rewrite it in an informal tone")
        True
        >>> style_register("make it less formal") == style_register("make it more casual")
        True
        >>> style_register("it is not formal enough"), style_register("less concise, please")
        (frozenset({'formal'}), None)
    """
    found = set()
    for m in _STYLE.finditer(text):
        if _asked_less(text, m.start(), m.end()):
            opposite = _OPPOSITE_STYLE.get(m[0].lower())
            if opposite is None:
                return None
            found.add(opposite)
        else:
            found.add(register_of(m[0]))
    return frozenset(found)


def _names(text: str, claims: _Claims) -> None:
    for m in _QUOTED.finditer(text):
        claims.take(m.start(1), m.end(1), Entity("name", m[1].strip().lower()))
    for m in _ZH_JIA_NAME.finditer(text):
        claims.take(m.start(1), m.end(1), Entity("name", m[1]))
    for start, end in _zh_names(text):
        claims.take(start, end, Entity("name", text[start:end]))
    for m in _PLACE.finditer(text):
        claims.take(m.start(), m.end(), Entity("name", m[0]))  # a known place is a name
    if _is_zh(text):
        for m in _LATIN_IN_ZH.finditer(text):
            if m[1].lower() not in _TERMS:
                claims.take(m.start(1), m.end(1), Entity("name", m[1].lower()))
    else:
        _english_names(text, claims)


def _english_names(text: str, claims: _Claims) -> None:
    for m in _ACRONYM.finditer(text):
        if m[1] not in _EN_STOP_CAPS:
            claims.take(m.start(1), m.end(1), Entity("name", m[1].lower()))
    for m in _CAPITALISED.finditer(text):
        if m[1] not in _EN_STOP_CAPS:
            claims.take(m.start(1), m.end(1), Entity("name", m[1].lower()))
    for m in _SINGLE_CAP.finditer(text):
        if m[1] not in ("I",) and not (m.start() == 0 and text[1:2] == " " and text[2:3].islower()):
            claims.take(m.start(1), m.end(1), Entity("name", m[1].lower()))


# Precedence: a money amount or a date claims its digits before they can read as a bare
# number, a file name before it can read as a name.
_EXTRACTORS = (_money_dates_times, _codes_versions, _numbers, _styles_documents, _names)


def extract_entities(text: str) -> list[Entity]:
    """Entities of one case-preserving normalised text, in order of first appearance."""
    claims = _Claims()
    for extract in _EXTRACTORS:
        extract(text, claims)
    return claims.in_order()
