"""Whether a time word makes a turn's answer depend on when it is asked.

A time word is often background, not what is asked: "今晚家里来朋友，红烧排骨怎么做才不柴？",
"I have a job interview tomorrow. What questions should I prepare for?", "how are you
today?", "what would Europe look like today if Napoleon had won?", "“今天”用日语怎么说",
"how do I get today's date in Python?", "我现在还清了房贷" (还 = repay). Read as time-sensitive,
such a turn is never cached. A time word does not count when it

- stands in quotation marks (a word or a title: "“今天”用日语怎么说", "《明天会更好》");
- is a greeting's ("how are you today", "今天过得怎么样");
- names the present of a hypothetical ("… today if Rome never fell", "如果今天是周三，100 天后是周几");
- names a date or time inside code ("today's date in Python", "datetime.now()", "SQL 最新的一条记录");
- is 现在还 read as "now repaid" ("现在还清了", "到现在还没到账");
- sits in a statement beside the question, when the question holds no time word of its own
  and asks no "when" ("今天跑了十公里，膝盖疼该冰敷还是热敷？"), unless the statement is a
  condition ("if I order today, when will it arrive?", "如果今天下单，…").

The readings work on the normalised text (``normalize_text``: quotation marks and 《》 as ", some
一 as 1), clause by clause (commas included).

    >>> [depends_on_now(t) for t in ("今晚家里来朋友,红烧排骨怎么做才不柴?", "今天北京天气怎么样?",
    ...                              "if i order today, when will it arrive?", "how are you today?")]
    [False, True, True, False]
"""

from __future__ import annotations

import re
from functools import lru_cache

_CLAUSE = re.compile(r"[,.;!?:\n…]+|-{2,}|\s-\s")
_QUOTED = re.compile(r"\"[^\"]{1,40}\"|(?<![a-z])'[^']{1,40}'(?![a-z])|「[^」]{1,40}」")
_GREETING = re.compile(r"\bhow (?:are|r) (?:you|u)(?: doing)?(?: today| tonight| this morning)\b|\bhow'?s your day\b|"
                       r"\bhow have you been\b|今天(?:过得|感觉|心情)(?:怎么样|如何|好吗|还好吗)|你今天(?:好吗|怎么样)|"
                       r"你今年(?:几岁|多大)|最近(?:怎么样|好吗|还好吗|过得)")
# Time words that are background wherever they are not asked about: "我目前在北京工作", "最近在投简历",
# "这周少跑一点" (the words before them only count in a statement beside no question).
_SOFT = re.compile(r"最近|近期|近来|这几天|这阵子|下[一1]?周|这[一1]?周|本周末?|这个?周末|今年|本月|这个月|下个?月|本赛季|这个?赛季|"
                   r"目前|眼下|当前|these days|this (?:weekend|week|month|year|season|cycle|semester|quarter)|currently",
                   re.I)
_PREMISE = re.compile(r"\b(?:if|suppose|assume|say)\s+today is (?:a )?(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|"
                      r"(?:如果|假如|假设|要是)今天是(?:周|星期|礼拜)[1-7一二三四五六日天]")
_COUNTERFACTUAL = re.compile(r"\bif\b[^.?!]*\b(?:had|hadn'?t|never|were|weren'?t|did not|didn'?t)\b|"
                             r"(?:如果|假如|要是)[^?!]*(?:没有|没|不曾|未)")
_PRESENT = re.compile(r"today|now|nowadays|今天|现在|如今", re.I)
_CODE = re.compile(r"(?<![a-z])(?:python|javascript|js|java|sql|mysql|excel|bash|shell|c\+\+|c#|golang|php|ruby|typescript|"
                   r"swift|kotlin|cron|pandas|datetime|moment|linux|powershell)(?![a-z])|\w\(\)")
_CODE_WORDS = re.compile(r"today|now|current|latest|今天|现在|当前|最新", re.I)
_DATE_IN_CODE = re.compile(r"^(?:'s)?\s*(?:date|time|timestamp|日期|时间|的?日期|的?时间|的?(?:1|一)条|记录|record|row|entry)")
_REPAID = re.compile(r"现在还(?=清|了|款|钱|贷|上了|完)|到现在还")
_CONDITION = re.compile(r"^\W*(?:(?:so|and|but|ok|okay)\W+)?(?:if|when|once|as soon as|in case|unless|should i)\b|"
                        r"^\W*(?:如果|要是|假如|假设|万一|一旦|等到?)")
_EN_QUESTION = re.compile(r"^\W*(?:(?:so|and|but|ok|okay|also|then|well)\W+)*(?:how|why|what|when|where|which|who|whom|"
                          r"is|are|was|were|am|do|does|did|can|could|should|would|will|shall|may|might|has|have|any)\b")
_ZH_QUESTION = re.compile(r"怎么|怎样|如何|为什么|为啥|什么|哪|是否|是不是|能否|能不能|可不可以|可以吗|多少|多久|多长|(?<![这那前后好])几(?!乎)|"
                          r"[吗么呢]\W*$|还是")
_REQUEST = re.compile(r"^\W*(?:please |pls )?(?:write|tell|give|make|suggest|recommend|list|explain|help|draft|plan|"
                      r"create|describe|share|show)\b|帮我|帮忙|请|给我|推荐|建议")
_ASKS_WHEN = re.compile(r"\b(?:when|what time|what day|what date|how many (?:days|weeks|hours)|how long (?:until|till|"
                        r"before|will it take)|until|till|by when|deadline|due)\b|什么时候|几点|几号|哪天|星期几|周几|"
                        r"多少天|几天|多久(?:能|才|到|后|以后|可以)|截止")


_MOST_READ = 8      # time words read one by one in a turn; more, and the turn counts as time-sensitive


@lru_cache(maxsize=512)
def _clauses(text: str) -> tuple[tuple[int, int, str], ...]:
    """(start, end, boundary after) of every clause, once per text (a turn holds several time words)."""
    out, start = [], 0
    for m in _CLAUSE.finditer(text):
        out.append((start, m.start(), m.group(0)))
        start = m.end()
    if start < len(text):
        out.append((start, len(text), ""))
    return tuple(out)


def _asks(clause: str, boundary: str) -> bool:
    """A question or a request: a question mark after it, a question word, an imperative."""
    return "?" in boundary or bool(_EN_QUESTION.search(clause) if clause.isascii() else _ZH_QUESTION.search(clause)) \
        or bool(_REQUEST.search(clause))


def depends_on_now(text: str, match: re.Match[str] | None = None, markers: re.Pattern[str] | None = None,
                   count: int | None = None) -> bool:
    """Whether the time word ``match`` (of ``markers``, tags.TIME_SENSITIVE by default) in the
    normalised ``text`` makes the answer depend on when it is asked; without ``match``, whether
    any does."""
    if markers is None:
        from smartcache.fingerprint.tags import TIME_SENSITIVE
        markers = TIME_SENSITIVE
    if match is None:
        found = list(markers.finditer(text))
        if len(found) > _MOST_READ:
            return True     # a turn full of times asks about times; and each reading scans the turn
        return any(depends_on_now(text, m, markers, len(found)) for m in found)
    start, end = match.span()
    if any(q.start() <= start and end <= q.end() for q in _QUOTED.finditer(text)):
        return False
    clauses = _clauses(text)
    here = next(((s, e, b) for s, e, b in clauses if s <= start < max(e, s + 1)), (0, len(text), ""))
    clause = text[here[0]:here[1]]
    word = match.group(0)
    if _GREETING.search(clause):
        return False
    if _PRESENT.fullmatch(word) and (_PREMISE.search(text) or _COUNTERFACTUAL.search(text) and re.search(
            r"\bwould\b|会", text)):
        return False
    if _CODE_WORDS.match(word) and (text[start - 1:start] == "." or text[end:end + 1] == "(" or
                                 _CODE.search(text) and _DATE_IN_CODE.match(text[end:])):
        return False
    if _REPAID.search(text, max(0, start - 1), end + 2) and word.startswith("现在还"):
        return False
    # Background: a statement beside a question or request that names no time and asks no "when".
    if _asks(clause, here[2]) or _CONDITION.search(clause):
        return True
    if _SOFT.fullmatch(word):
        return False
    if len(re.sub(r"\W", "", clause.replace(word, "", 1))) < 3:
        return True     # the clause is the time word ("今天，书虫大作战答案是？"): it dates the question
    asked = [(s, e, timed) for s, e, timed in _asked(text, markers) if (s, e) != here[:2]]
    if count is None:
        count = sum(1 for _ in markers.finditer(text))
    if not asked or count > 1:
        return True     # a statement alone ("明天上海的航班"), or two times that may make a span ("今天借，10 号还")
    return any(timed for _, _, timed in asked)


@lru_cache(maxsize=512)
def _asked(text: str, markers: re.Pattern[str]) -> tuple[tuple[int, int, bool], ...]:
    """The clauses that ask, each with whether it names a time or asks "when"; once per text."""
    return tuple((s, e, bool(markers.search(text, s, e) or _ASKS_WHEN.search(text, s, e)))
                 for s, e, b in _clauses(text) if _asks(text[s:e], b))
