"""Whether a time word makes a turn's answer depend on when it is asked.

A time word is often background, not what is asked: "今晚家里来朋友，红烧排骨怎么做才不柴？",
"I have a job interview tomorrow. What questions should I prepare for?", "how are you
today?", "what would Europe look like today if Napoleon had won?", "“今天”用日语怎么说",
"how do I get today's date in Python?", "我现在还清了房贷" (还 = repay). Read as time-sensitive,
such a turn is never cached. But a time-bound turn read as timeless is served stale, the
worse error, so a time word counts unless it

- stands in quotation marks as a word or inside a title ("“今天”用日语怎么说", "《明天会更好》");
  not a word quoted for emphasis ("现在“最新”的iPhone");
- is a greeting's, and the greeting ends its clause ("how are you today?", "今天过得怎么样");
- is dated by a premise ("if today is Friday, what day is it 45 days from now?") or names the
  present of a hypothetical that asks no worth ("… today if Rome never fell");
- names a date or time inside code ("today's date in Python", "datetime.now()");
- is 现在还 read as "now repaid" ("现在还清了");
- is "lately", "currently", "latest", "next week" and the like in a question of how to do
  something ("最近总是失眠怎么办", "js怎么获取当前url"), or outside any question in more than a
  short bare query ("我目前在北京工作");
- sits in a statement beside questions of how to do something, none naming a time, a "when" or a
  state of the world (rain, open, tickets, crowds, delays, deals, prices): "今天跑了十公里，膝盖疼
  该冰敷还是热敷？"; not beside "明天去爬山，会下雨吗？", nor in a condition ("if I order today, …").

The readings work on the normalised text (``normalize_text``: quotation marks and 《》 as ", some
一 as 1, 。 as "."), clause by clause (commas included).

    >>> [depends_on_now(t) for t in ("今晚家里来朋友,红烧排骨怎么做才不柴?", "今天北京天气怎么样?",
    ...                              "if i order today, when will it arrive?", "how are you today?")]
    [False, True, True, False]
"""

from __future__ import annotations

import re
from datetime import date
from functools import lru_cache

_CLAUSE = re.compile(r"[,.;!?:\n…]+|-{2,}|\s-\s")
_SENTENCE = re.compile(r"[.;!?\n…]+")
_CJK = re.compile(r"[\u3400-\u9fff]")
# A quoted word or title; not inch marks ("a 6\" sub").
_QUOTED = re.compile(r"(?<!\d)\"[^\"]{1,40}\"|(?<![a-z])'[^']{1,40}'(?![a-z])|「[^」]{1,40}」")
# After a quoted word: a question about the word itself ("“今天”用日语怎么说", "is 'tomorrow' a noun").
_ABOUT_THE_WORD = re.compile(r"\W*(?:用|in |is |means?\b|是什么意思|怎么(?:说|写|读|翻译)|的意思|这个词|a (?:noun|verb|word)|"
                             r"(?:and|和|与) \W)")
_GREETING = re.compile(r"\bhow (?:are|r) (?:you|u)(?: doing)?(?: today| tonight| this morning)\b|\bhow'?s your day\b|"
                       r"\bhow have you been\b|今天(?:过得|感觉|心情)(?:怎么样|如何|好吗|还好吗)|你今天(?:好吗|怎么样)|"
                       r"你今年(?:几岁|多大)|(?:^|[你您])\W*最近(?:怎么样|好吗|还好吗|过得)")
# Time words that date nothing unless asked about: "我目前在北京工作", "最近总是失眠怎么办",
# "how do I study for my next exam", "下个月去日本旅游要准备什么".
_SOFT = re.compile(r"最新|latest|newest|most recent|current \w+(?: \w+)?|最近|近期|近来|这几天|这阵子|下[一1]?周|这[一1]?周|本周末?|这个?周末|今年|本月|这个月|下个?月|上个?月|"
                   r"上[一1]?周|去年|明年|本赛季|这个?赛季|目前|眼下|当前|下[一1][班趟次场期届轮]|"
                   r"these days|this (?:weekend|week|month|year|season|cycle|semester|quarter)|currently|"
                   r"next (?:\w+ )?(?:exam|test|game|match|episode|season|release|update|event)|last (?:month|week|year)'?s?",
                   re.I)
# What a "latest" names when it asks for the content of the moment ("结合最新的热点写一段文案",
# "summarise the latest news"): the answer holds what is current, whatever the request's form.
_LATEST_CONTENT = re.compile(r"\W{0,2}(?:的)?[\u4e00-\u9fff]{0,4}?(?:热点|热搜|新闻|时事|动态|趋势|资讯|头条|消息|行情|事件|话题|进展|排行|榜单|"
                             r"梗|流行语)|\s+(?:\w+\s+){0,2}(?:news|headlines|trends?|trending|developments|events|"
                             r"updates|happenings|memes)\b")
_FIRST_PERSON = re.compile(r"我|咱|宝宝|孩子|\bi\b|\bi'm\b|\bmy\b|\bwe\b|\bour\b")
_PREMISE = re.compile(r"\b(?:if|suppose|assume|say)\s+today is (?:a )?(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|"
                      r"(?:如果|假如|假设|要是)今天是(?:周|星期|礼拜)[1-7一二三四五六日天]")
_COUNTERFACTUAL = re.compile(r"\bif\b[^.?!]*\b(?:had|hadn'?t|never|were|weren'?t|did not|didn'?t)\b[^.?!]*\bwould\b|"
                             r"\bwould\b[^.?!]*\bif\b[^.?!]*\b(?:had|hadn'?t|never|were|weren'?t)\b|"
                             r"(?:如果|假如|要是)[^?!.]*(?:没有|不曾|未曾)[^?!.]*会")
_WORTH = re.compile(r"worth|how much|price|cost|\bhave today|值|赚|多少钱|价格|收益")
_PRESENT = re.compile(r"today|now|nowadays|今天|现在|如今", re.I)
_CODE = re.compile(r"(?<![a-z])(?:python|javascript|js|java|sql|mysql|excel|bash|shell|c\+\+|c#|golang|php|ruby|typescript|"
                   r"kotlin|cron|pandas|datetime|linux|powershell|react|vue|django)(?![a-z])")
_CODE_WORDS = re.compile(r"today|now|current|latest|今天|现在|当前|最新", re.I)
_TO_GET = re.compile(r"(?:get|print|format|display|show|insert|return|output|获取|打印|格式化|显示|插入|取得|返回|得到|拿到|输出)"
                     r"[^,.;!?]{0,6}$")
_DATE_IN_CODE = re.compile(r"(?:'s)?\s*(?:date|time|timestamp|的?日期|的?时间)")
_REPAID = re.compile(r"现在还(?=清|款|钱|贷|上了|完|了(?!吗))")
_CONDITION = re.compile(r"^\W*(?:(?:so|and|but|ok|okay)\W+)?(?:if|when|once|as soon as|in case|unless|should i)\b|"
                        r"^\W*(?:如果|要是|假如|假设|万一|一旦|等到?)")
_EN_QUESTION = re.compile(r"^\W*(?:(?:so|and|but|ok|okay|also|then|well)\W+)*(?:how|why|what|when|where|which|who|whom|"
                          r"is|are|was|were|am|do|does|did|can|could|should|would|will|shall|may|might|has|have|any|"
                          r"i wonder|wondering|whether)\b")
_ZH_QUESTION = re.compile(r"怎么|怎样|如何|为什么|为啥|什么|哪|是否|是不是|能否|能不能|可不可以|可以吗|多少|多久|多长|(?<![这那前后好])几(?!乎)|"
                          r"[吗么呢]\W*$|还是|(.)不\1")
_REQUEST = re.compile(r"^\W*(?:please |pls )?(?:write|tell|give|make|suggest|recommend|list|explain|help|draft|plan|"
                      r"create|describe|share|show)\b|帮我|帮忙|请|给我|推荐|建议")
# A question about how to do something, or advice: what a time word beside it does not date
# ("今晚家里来朋友，排骨怎么做", "I have an interview tomorrow. What should I wear?").
_EN_HOW_TO = re.compile(
    r"^\W*(?:(?:so|and|but|ok|okay|also|then|well|now)\W+)*(?:how (?:do|can|should|would|to|long should|long do|"
    r"often should|much should|early should|many should|do you)|what (?:should|can i|do i|to|would you|are (?:some|"
    r"good|the best)|questions|clauses)|what(?:'s| is) (?:the best|a good|the difference)|should "
    r"(?:i|we)|can you (?:explain|help|suggest|recommend|give|tell me how)|any (?:tips|advice|ideas|suggestions)|tips|"
    r"is it (?:ok|okay|safe|normal|bad|fine) to|why (?:do|does|did|is|are|am) (?:my|i|it|he|she|they)|which (?:is better|"
    r"should))\b")
_ZH_HOW_TO = re.compile(
    r"怎么(?!样|还|又|了)|如何|应该|"
    r"该(?:怎么|如何|冰敷|热敷|吃|穿|带|注意|准备|选|买|做)|注意(?:什么|哪些|事项)|有什么[^,.;!?]{0,4}(?:建议|技巧|方法|办法|讲究|注意|要求)|"
    r"怎样才能|方法|办法|技巧|要(?:蒸|煮|炖|烤|炒)(?:多久|几分钟)|准备(?:什么|哪些)|带什么|穿什么|吃什么|做什么|是什么意思|什么原因|"
    r"怎么回事|正常吗|能不能(?:吃|喝|用|做|运动)|区别|去医院")
# What in a question asks about a state of the world, whatever else it asks: the weather, a
# shop open, tickets, crowds, delays, deals, prices, what is on.
_STATE = re.compile(
    r"下雨|下雪|雨|雪|(?<![敷])冷(?!敷|静|冻|藏|水)|(?<![敷])热(?!敷|水|量|情|门|爱|身|菜|油|点)|开门|营业|上班|票|人多|排队|"
    r"延误|晚点|停运|限行|优惠|打折|多少钱|价格|价|比赛|好看|上映|天气|温度|堵|"
    r"\b(?:rain\w*|snow\w*|cold|hot|weather|open|closed|tickets?|crowded|busy|delay\w*|deals?|sales?|price\w*|cost|"
    r"how much|playing|score|traffic|down|up or down|showing|on tonight)\b")

# A question of how a price or a market works, asked of no moment: "how are gas prices set", "why do
# gas prices go up in summer", "what happens to bond prices when rates fall", "油价是怎么定的". Not
# "why is bitcoin down" (a present state), "油价为什么涨了" (what just happened).
_EXPLAINS = re.compile(
    r"^\W*(?:(?:so|and|but|ok|okay|also|then|well)\W+)*(?:why (?:do|does|would|can|might)\b|how (?:are|is|do|does) [^?]{0,40}"
    r"\b(?:set|determined|calculated|decided|regulated|measured|priced|made up|computed|adjusted)\b|what (?:determines|affects|"
    r"drives|causes|influences|sets|decides|moves)\b|what happens (?:to|when|if)\b|what (?:factors|makes)\b|"
    r"what does [^?]{1,40} mean\b|how (?:do|does|can) [^?]{0,40}\b(?:affect|impact|influence)\b|"
    r"how (?:do|can|would) (?:i|you|we) (?:tell|know|check|find out|see) (?:if|whether)\b|how to (?:tell|check|know) (?:if|whether)\b)|"
    r"是什么意思|为什么[^,.;!?]{0,12}会|为何会|^\W*(?:我)?(?:想问)?(?:怎么|如何)(?:判断|知道|分辨|区分)|"
    r"(?:是)?(?:怎么|如何)(?:定|算|计算|确定|形成|制定)(?:出来)?的|由什么决定|受(?:什么|哪些)(?:因素)?影响|影响因素|取决于什么|形成机制|定价机制")
# ... unless it asks why a price keeps moving now ("why do gas prices keep going up", "油价为什么一直涨").
_STILL_MOVING = re.compile(r"\bkeep(?:s)? \w+ing\b|\bso (?:high|low|expensive|cheap)\b|\bstill\b|一直|这么|那么|最近|还在|越来越", re.I)
# A word that names a moment itself (whole words; 上证 names none): never read as dated by a year or
# as a question of how prices work.
_NAMES_A_MOMENT = re.compile(r"\b(?:today|tonight|tomorrow|yesterday|now|current(?:ly)?|this|next|last|latest|recent(?:ly)?|newest|"
                             r"moment|live|real-?time)\b|今天|今日|今晚|明天|昨天|现在|最近|最新|目前|当前|刚刚|此刻|实时|眼下|"
                             r"[本这下上]个?(?:周|星期|礼拜|月|赛季)|今年|明年|去年", re.I)

# A year named beside a result, a price or an office holder dates the question itself: "who won the world
# cup in 1998", "2023年的GDP是多少". Not an age or a countdown, which runs to now ("how old is someone born
# in 1990", "how many years ago was 1999").
_YEAR = re.compile(r"(?<![\d.$€£¥])((?:1[5-9]|20)\d\d)(?![\d.%]|[-/]\d)(?:年(?!代)|s?\b)|"
                   r"\b(?:super bowl|wrestlemania|ufc) (?:[lxvi]+|\d{1,3})\b|第[\d一二三四五六七八九十]+届")
# What a year dates: a result, a price or a level, who held an office. Not a release, seats or
# tickets, standings or a race still run, a registration still open ("is the 2026 MacBook out yet").
_DATABLE = re.compile(r"\b(?:won|win|winners?|champions?|price|prices|cost|worth|gdp|cpi|inflation|rates?|president|prime minister|"
                      r"ceo|who (?:is|was|are|were)|richest|ranked|number one)\b|冠军|赢|价|多少钱|多少点|利率|汇率|总统|首相|总理|是谁|首富|"
                      r"俱乐部|球队|gdp|cpi", re.I)
_FUTURE = re.compile(r"\b(?:will|going to|gonna|expected to)\b|将|预计|(?<![运奥全大集聚社体舞晚宴])会(?![员议计长场])", re.I)   # "when will the 2027 form be out": news may move it
_RUNS_TO_NOW = re.compile(r"\b(?:old|ago|since|until|till|left|remaining|from (?:now|today))\b|多大|几岁|还有|距离?|离|至今|到现在", re.I)

# What a sum on the turn's own numbers asks ("a loan of $1000 grows to $1100, what is the interest rate").
_WORKED = re.compile(r"\b(?:left|remaining|interest rates?)\b|几岁|还剩|还有几|剩(?:几|多少)", re.I)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_CLOCK_TIME = re.compile(r"(?<!\d)\d{1,2}:\d{2}(?!\d)")     # "the 6:40 flight" holds no operand


def _dated(clause: str) -> bool:
    """Whether the clause names a past year or edition: this year and later ones are still running."""
    this_year = date.today().year
    return any(not m.group(1) or int(m.group(1)) < this_year for m in _YEAR.finditer(clause))


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


def _is_zh(clause: str) -> bool:
    return bool(_CJK.search(clause))


def _asks(clause: str, boundary: str) -> bool:
    """A question or a request: a question mark after it, a question word, an imperative."""
    return "?" in boundary or bool(_ZH_QUESTION.search(clause) if _is_zh(clause) else _EN_QUESTION.search(clause)) \
        or bool(_REQUEST.search(clause))


def _how_to(clause: str) -> bool:
    """A question of how to do something, or of advice, that asks about no state of the world."""
    how = _ZH_HOW_TO.search(clause) if _is_zh(clause) else _EN_HOW_TO.search(clause)
    return bool(how) and not _STATE.search(clause)


# What makes a turn more than a bare query: a statement ("这周三就得搬了", "i'm …") or an instruction.
_NOT_A_QUERY = re.compile(r"[了得要会就把加改换写删排想去]|安排|去掉|打算|准备|计划|"
                          r"\b(?:is|are|was|were|have|has|had|will|i|i'm|we|my|our|add|include|make|change|write|plan|"
                          r"thank|thanks)\b")


def _bare_query(text: str) -> bool:
    """A short turn that only names what it asks about ("今年高考分数线", "this year's tax brackets")."""
    short = len(re.sub(r"\W", "", text)) <= 16 if _is_zh(text) else len(text.split()) <= 8
    return short and not _NOT_A_QUERY.search(text) and not _FIRST_PERSON.search(text)


def _sentence(text: str, start: int) -> str:
    left = max((m.end() for m in _SENTENCE.finditer(text, 0, start)), default=0)
    right = _SENTENCE.search(text, start)
    return text[left:right.start() if right else len(text)]


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
    word = match.group(0)
    for q in _QUOTED.finditer(text, max(0, start - 42), min(len(text), end + 42)):
        if q.start() < start and end < q.end():
            # A title or a phrase holding the word, or the word asked about; not "现在"最新"的iPhone".
            if q.group(0)[1:-1].strip() != word or _ABOUT_THE_WORD.match(text, q.end()):
                return False
    clauses = _clauses(text)
    here = next(((s, e, b) for s, e, b in clauses if s <= start < max(e, s + 1)), (0, len(text), ""))
    clause = text[here[0]:here[1]]
    if any(g.start() <= start - here[0] and end - here[0] <= g.end() and len(clause) - g.end() < 4
           for g in _GREETING.finditer(clause)):
        return False        # a greeting that ends its clause ("how are you today?"), not one run into a question
    sentence = _sentence(text, start)
    if _PREMISE.search(sentence):
        return False        # "if today is friday, what day will it be 45 days from now?": the premise dates it
    if _PRESENT.fullmatch(word) and _COUNTERFACTUAL.search(sentence) and not _WORTH.search(sentence):
        return False        # "what would the world be like today if rome never fell"
    if _CODE_WORDS.fullmatch(word) and (text[start - 1:start] == "." and text[end:end + 1] == "(" or
                                         text[end:end + 2] == "()" or
                                         _TO_GET.search(text, max(0, start - 12), start) and
                                         _DATE_IN_CODE.match(text, end) and
                                         _CODE.search(text, max(0, start - 40), end + 40)):
        return False        # "datetime.now()", "how do i get today's date in python"
    if word.startswith("现在还") and _REPAID.match(text, start):
        return False        # "我现在还清了房贷": repaid, not "still"
    asks = _asks(clause, here[2])
    of_no_moment = not _NAMES_A_MOMENT.search(word) and not _SOFT.fullmatch(word)
    if of_no_moment and _DATABLE.search(word) and _dated(clause) and not _RUNS_TO_NOW.search(clause) \
            and not _FUTURE.search(clause):
        return False        # "who won the world cup in 1998": the year dates what is asked
    if of_no_moment and _EXPLAINS.search(sentence) and not _STILL_MOVING.search(sentence):
        return False        # "how are gas prices set?", "油价是怎么定的": how a market works, not where it is now
    if of_no_moment and _WORKED.search(word) and len(_NUMBER.findall(_CLOCK_TIME.sub(" ", sentence))) >= 2:
        return False        # "i have 20 days and used 12, how many are left": a sum on the turn's own numbers
    if _STATE.search(clause) and not _SOFT.fullmatch(word):
        return True         # a state beside the time word: "明天去爬山会下雨吗", "wondering whether it will snow tomorrow"
    if _SOFT.fullmatch(word):
        if _LATEST_CONTENT.match(text, end) and not _how_to(clause):
            return True     # "结合最新的热点写一段文案": written from what is current; not "怎么获取最新的新闻"
        if asks:
            return not _how_to(clause)      # "最近总是失眠怎么办"; not "最近有什么好看的电影"
        return _bare_query(text)    # "今年高考分数线", "目前的房贷利率"; not "我目前在北京工作", "再加上下周的安排"
    if asks or _CONDITION.search(clause):
        return True
    if len(re.sub(r"\W", "", clause.replace(word, "", 1))) < 3:
        return True     # the clause is the time word ("今天，书虫大作战答案是？"): it dates the question
    # Background: a statement beside questions of how to do something, none naming a time or a state.
    asked = [(s, e, timed) for s, e, timed in _asked(text, markers) if (s, e) != here[:2]]
    if count is None:
        count = sum(1 for _ in markers.finditer(text))
    if not asked or count > 1:
        return True     # a statement alone ("明天上海的航班"), or two times that may make a span ("今天借，10 号还")
    return any(timed or not _how_to(text[s:e]) for s, e, timed in asked)


@lru_cache(maxsize=512)
def _asked(text: str, markers: re.Pattern[str]) -> tuple[tuple[int, int, bool], ...]:
    """The clauses that ask, each with whether it names a time or asks "when"; once per text."""
    return tuple((s, e, bool(markers.search(text, s, e) or _ASKS_WHEN.search(text, s, e)))
                 for s, e, b in _clauses(text) if _asks(text[s:e], b))


# A turn that only carries the last question on: "那上海呢？", "what about Tokyo?", "现在呢", "still?".
_ZH_CARRIES_ON = re.compile(r"呢$|^(?:还|现在|今天|明天)[^呢]{0,5}$")
_EN_CARRIES_ON = re.compile(r"^(?:what about|how about|and|also|still|now|then|again|same for|is it still|has it|"
                            r"what of)\b")


def looks_carried_on(text: str) -> bool:
    """Whether the normalised ``text`` is a short turn that carries the last question on."""
    bare = re.sub(r"[\W_]+", " ", text).strip()
    if _is_zh(bare):
        return len(bare.replace(" ", "")) <= 10 and bool(_ZH_CARRIES_ON.search(bare))
    words = bare.split()
    return len(words) <= 6 and bool(_EN_CARRIES_ON.search(bare)) or len(words) <= 2 and text.rstrip().endswith("?")


def carries_on(text: str, previous: str | None) -> bool:
    """Whether the normalised ``text`` only carries on a time-sensitive ``previous`` user turn
    (after "今天北京天气怎么样", "那上海呢" asks the same of today). ``previous``: the user turn
    before it, normalised, or None."""
    if not previous or not looks_carried_on(text) or _how_to(text):
        return False
    from smartcache.fingerprint.tags import is_time_sensitive
    return is_time_sensitive(previous)
