"""What one request changed from the other: a swapped word, noun or role, an opposite,
two entities the other way round, an edited prior turn, another term to define.

Each compares the two texts (or their entity sets) of a candidate and the request; the
judge and the evidence both ask them.

    >>> substituted_spans("帮我写一封请假邮件", "帮我写一封投诉邮件")
    [('请假', '投诉')]
    >>> _roles_swapped("男生说女生可爱", "女生说男生可爱", ("男生", "女生"))
    ('女生', '男生')
    >>> _opposite_swap("小货车用什么牌子的轮胎好", "大货车轮胎什么牌子好")
    ('小', '大')
"""

from __future__ import annotations

import re
from functools import lru_cache

from smartcache.decide.tokens import (
    _FILLER, _PLACEHOLDER, _QUESTION_WORDS, _SHOWN, _common_share, _is_form_word, _tokens, diff,
)
from smartcache.fingerprint import Signature, has_reference
from smartcache.fingerprint.lexicon import roles, word_opposites

_MAX_SLOT = 4   # a swapped word: up to 4 CJK characters or 4 English words; longer is a rephrasing


def substituted_spans(a: str, b: str) -> list[tuple[str, str]]:
    """Spans that one text replaces in the other, when the two are otherwise the same
    sentence (a "minimal pair"); synonym swaps are not listed. Empty when the texts
    are rephrasings rather than one-slot edits."""
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return []
    if _common_share(ta, tb) < 0.5:
        return []
    joiner = lambda toks: ("" if all(len(t) == 1 and t >= "\u3400" for t in toks) else " ").join(toks)
    replaced = [(i1, i2, j1, j2) for op, i1, i2, j1, j2 in diff(ta, tb).opcodes if op == "replace"]
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


def aligned_entities(probe: Signature, cached: Signature) -> tuple[set[str], set[str]]:
    """Each request's entities, numbers aligned (``_align_numbers``), and a name one side
    extracted counted on the other side too where its words are there, in any case: how a
    name was typed, not what was asked, decides whether it is extracted ("Python: how can I
    reverse a list?" / "… a list in Python?", "how do i freeze a row in excel" / "… in
    Excel?"), in its first clause. A name whose words are missing from there stays added or
    dropped."""
    mine, theirs = _align_numbers(set(probe.entities), set(cached.entities))
    also_mine = {k for k in theirs - mine if _named_in(k, probe.text)}
    also_theirs = {k for k in mine - theirs if _named_in(k, cached.text)}
    return mine | also_mine, theirs | also_theirs


def _named_in(key: str, text: str) -> bool:
    """Whether the first clause of ``text`` holds the words of the name ``key`` ("name:wells
    fargo"), whole words in any case; Chinese names as they are written. Not a later clause:
    "how do i cancel my youtube premium, i did spotify premium already" asks about youtube,
    with spotify beside it."""
    kind, _, value = key.partition(":")
    if kind != "name" or not value:
        return False
    first = _CLAUSE_END.split(text, maxsplit=1)[0]
    if _CJK_CHAR.search(value):
        return value in first
    return re.search(r"(?<![a-z0-9])" + re.escape(value) + r"(?![a-z0-9])", first.lower()) is not None


_CJK_CHAR = re.compile(r"[\u3400-\u9fff]")
_CLAUSE_END = re.compile(r"[,;.!?]\s|[，；。！？]")   # "node.js" and "1,000" hold no clause's end


def _canonical_noun(noun: str) -> str:
    return _PLACEHOLDER.get(noun, noun)


def _noun_swap(mine: tuple[str, ...], theirs: tuple[str, ...]) -> tuple[list[str], list[str]] | None:
    """Nouns the cached request has that this one lacks *and* nouns this one has that the
    cached lacks: the subject was swapped ("电饭煲" -> "运动手表"). Only one side's extra
    nouns ("我的耳机" / "耳机出了故障") is a rephrasing. A noun that contains, or is
    contained in, one on the other side ("手表" / "运动手表") is the same noun."""
    return _noun_swap_sets({_canonical_noun(n) for n in mine}, {_canonical_noun(n) for n in theirs})


def _noun_swap_sets(a: set[str] | frozenset[str], b: set[str] | frozenset[str]
                    ) -> tuple[list[str], list[str]] | None:
    """``_noun_swap`` of the two sides' canonical nouns (read once per side: ``side.Side``)."""
    extra_mine = sorted(n for n in a - b if not any(n in m or m in n for m in b))
    extra_theirs = sorted(n for n in b - a if not any(n in m or m in n for m in a))
    return (extra_theirs, extra_mine) if extra_mine and extra_theirs else None


# Words before a role that say whose it is, read past: "my boss" is the boss, 我的老师 the teacher.
_WHOSE = frozenset({"my", "our", "your", "his", "her", "their", "the", "a", "an"})
_WHOSE_ZH = re.compile(r"^(?:我们的|我的|你的|他的|她的|我|给)")


@lru_cache(maxsize=1)
def _role_words() -> tuple[dict[str, str], re.Pattern[str]]:
    """Word -> role, and one pattern of every role word, the longest first (女朋友 before 朋友;
    English ones whole words)."""
    table = roles()
    parts = [re.escape(w) if not w.isascii() else rf"\b{re.escape(w)}\b"
             for w in sorted(table, key=len, reverse=True)]
    return table, re.compile("|".join(parts), re.I)


@lru_cache(maxsize=4096)
def _people(text: str) -> tuple[tuple[str, str], ...]:
    """(role, word as written) of each person a text names by role, in order; memoised: a
    cached turn meets every lookup that finds it."""
    table, pattern = _role_words()
    return tuple((table[m.group().lower()], m.group()) for m in pattern.finditer(text))


def person_swapped(a: str, b: str, swaps: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The one slot edited is one person for another by role, the rest word for word ("a
    thank-you email to my client" / "… to my boss", 给老师 / 给同事, 女朋友 / 男朋友): an answer
    about or for someone else. Words of one role are one person ("boss" / "manager", 老板 /
    领导). Returns the two words (b's, a's). Measured before it became a veto, over 84,932 public
    pairs (QQP, LCQMC, BQ, PAWS-X; ``scripts/person_swap_pairs.py``): 22 fired, 20 labelled
    different, the others boyfriend / girlfriend in a question about marriage and "is my
    grandfather / mother enlightened"."""
    if len(swaps) != 1:
        return None
    people_a, people_b = _people(a), _people(b)
    if len(people_a) != len(people_b):
        return None
    changed = [(x[1], y[1]) for x, y in zip(people_a, people_b) if x[0] != y[0]]
    if len(changed) != 1:
        return None
    # The slot is the person alone ("my client", or 女 of 女朋友), not a kind of one: "medical
    # students" / "doctors" is left to the rest of the evidence.
    (word_a, word_b), (slot_a, slot_b) = changed[0], swaps[0]
    alone = lambda slot, word: " ".join(re.sub(r"'s?$", "", w) for w in slot.lower().split() if w not in _WHOSE) \
        in word.lower() or _WHOSE_ZH.sub("", slot.replace(" ", "")) in word
    return (word_b, word_a) if alone(slot_a, word_a) and alone(slot_b, word_b) else None


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


# Wordings in which the order of two entities carries meaning: from/to, A vs B. A trip from X
# may also end with 回 or a 往 of going ("从香港过关回深圳", "从上海开往成都"), close after its 从,
# in one clause: not 从来 / 从事 / 服从, 往往, 返回 (a function's value as often as a trip), 一回事,
# 回答 / 回复 / 回滚 / 回调 and the like (a review's pairs: tests/test_return_trips.py).
_ORDER_MATTERS = re.compile(r"从.+(?:到|去|至)|(?<!服)从(?![来未小此事零头不没而容前])[^，。？！,.?!；;]{1,12}?"
                            r"(?:飞往|开往|前往|去往|驶往|(?<![返一])回(?![答复应顾忆想收报避馈头执滚调车事]))|飞|比|还是|"
                            r"\bfrom\b.+\bto\b|\bvs\.?\b|\bversus\b|\bthan\b|\bor\b|\bbetween\b|\bto\b.+\bfrom\b")


def _anaphora(x: str, y: str, text_x: str, text_y: str) -> bool:
    """'it' for a noun the same sentence already names ("I forgot my password, how do I reset it?")."""
    return (has_reference(y) and x in text_y) or (has_reference(x) and y in text_x)



# An apostrophe or a hyphen joins letters ("don't", "e-mail"); one that closes a quotation is no
# part of the word ("translate 'the dog bit the man'": man, not man').
_ENGLISH_WORD = re.compile(r"[a-z](?:[a-z]|['-](?=[a-z])){2,}")
# Adjacent, joined by a conjunction, or one modifying the other ("八宝粥哪个牌子" / "那个牌子的
# 八宝粥"): a list or a compound, not two roles.
_CONJOINED = r"\s*(?:和|与|跟|及|或|、|,|，|/|\band\b|\bor\b|&|的|之|[哪那这][个种家款]|\bof\b|'s)?\s*"


@lru_cache(maxsize=8192)
def _either(x: str, y: str) -> re.Pattern[str]:
    """Compiled once per pair of words: the ``re`` module's own cache (512 patterns) is
    churned by the pairs of every candidate."""
    pattern = (lambda w: rf"\b{re.escape(w)}\b" if w.isascii() else re.escape(w))
    return re.compile(f"{pattern(x)}|{pattern(y)}")


# What may stand between two joined words, then the first character of the second word (so the
# gap's word boundaries see it): matched in place by ``_joined``.
_GAP = re.compile(_CONJOINED + r"(?s:.)")


def _joined(text: str, x: str, y: str) -> bool:
    """Whether ``x`` then ``y`` stand in ``text`` side by side or joined by a conjunction: what
    ``re.search(re.escape(x) + _CONJOINED + re.escape(y), text)`` says, without compiling a
    pattern for every pair of words (a compile costs more than the rest of the rule). Every
    place ``x`` ends and ``y`` starts after it, the gap is matched in place (``pos`` and
    ``endpos``), so its word boundaries see the characters around it as the search's do.

        >>> _joined("苹果和香蕉哪个好", "苹果", "香蕉"), _joined("男生说女生可爱", "男生", "女生")
        (True, False)
        >>> _joined("cats and dogs", "cats", "dogs"), _joined("catsanddogs", "cats", "dogs")
        (True, False)
    """
    if not x or not y:
        return re.search(f"{re.escape(x)}{_CONJOINED}{re.escape(y)}", text) is not None
    starts = []
    k = text.find(y)
    while k >= 0:
        starts.append(k)
        k = text.find(y, k + 1)
    if not starts:
        return False
    i = text.find(x)
    while i >= 0:
        end = i + len(x)
        if any(k >= end and _GAP.fullmatch(text, end, k + 1) for k in starts):
            return True
        i = text.find(x, i + 1)
    return False


def _exchange(text: str, x: str, y: str) -> str:
    return _either(x, y).sub(lambda m: y if m.group(0) == x else x, text)


_NOT_ROLES = _FILLER | _QUESTION_WORDS


def _roles_swapped(a: str, b: str, nouns: tuple[str, ...]) -> tuple[str, str] | None:
    """Two words of both requests that trade places, the rest unchanged: "男生说女生可爱" /
    "女生说男生可爱", "what do Indians find annoying in foreigners" / "... foreigners ... Indians".
    Found by exchanging them in one text and seeing it become the other. Words side by side
    ("韩国电影爱人" / "韩国爱人电影") or joined by "和" / "and" ("苹果和香蕉哪个好") are a
    compound or a symmetric list: their order is no role."""
    a, b = a.lower(), b.lower()
    words = set(nouns) | (set(_ENGLISH_WORD.findall(a)) & set(_ENGLISH_WORD.findall(b)))
    words -= _NOT_ROLES
    both = sorted(w for w in words if w in a and w in b)
    if len(both) < 2 or len(both) > 12:
        return None
    ta, tb = _tokens(a), _tokens(b)
    # Two words trading places keep the words: texts that share few cannot be a swap of each
    # other (the share test below needs 0.85), so the pairwise exchanges are skipped.
    if len(set(ta) & set(tb)) < 0.5 * max(len(set(ta)), len(set(tb))):
        return None
    base = _common_share(ta, tb)
    if base + 0.1 > 1.0:
        # No exchange can pass: a share is at most 1.0, and it must exceed the base by 0.1.
        return None
    for i, x in enumerate(both):
        for y in both[i + 1:]:
            if x in y or y in x:
                continue
            if any(_joined(t, p, q) for p, q in ((x, y), (y, x)) for t in (a, b)):
                continue
            share = _common_share(_tokens(_exchange(a, x, y)), tb)
            if share >= 0.85 and share >= base + 0.1:
                return x, y
    return None


# Tokens for ``exchanged_spans``: words, single CJK characters and punctuation (kept, so a
# clause boundary is visible); articles are dropped ("a manager" / "an employee").
_EXCHANGE_TOKEN = re.compile(r"[a-z0-9](?:[a-z0-9_/]|['.-](?=[a-z0-9]))*|[\u3400-\u9fff]|[^\sa-z0-9\u3400-\u9fff]")
_ARTICLES = frozenset({"a", "an", "the"})
_CLAUSE_MARKS = frozenset(".,;:!?，。；：！？、()（）[]【】")
# What joins two parts symmetrically, anywhere between them: "A and B", "A 和 B", "A 好还是 B 好",
# "环保又文明" ask the same in either order.
_SYMMETRIC_WORDS = frozenset({"and", "or", "vs", "versus", "&", "/", "nor", "both"})
_SYMMETRIC_ZH = re.compile(r"和|与|跟|及|或|还是|又|且|同|并")
_EXCHANGE_SPAN = 6     # tokens of a part that trades places; longer parts are clauses reordered


def exchanged_spans(a: str, b: str) -> tuple[str, str] | None:
    """Two parts of one request that trade places in the other, everything else the same:
    "from db01 to web01" / "from web01 to db01", "上级感谢下属" / "下属感谢上级", "2的10次方" /
    "10的2次方". Not when they are joined symmetrically ("A 和 B", "A 好还是 B 好", "A or B"),
    nor when a part is a clause or a parenthesis ("Answer in one sentence: what is …?" / "What is …? Answer in one sentence.").

        >>> exchanged_spans("convert 50 euros to us dollars", "convert 50 us dollars to euros")
        ('euros', 'us dollars')
        >>> exchanged_spans("苹果和香蕉哪个好", "香蕉和苹果哪个好") is None
        True
        >>> exchanged_spans("is a square a rectangle?", "is a rectangle a square?")
        ('square', 'rectangle')
        >>> exchanged_spans("what's 2 to the power of 10?", "what is 10 to the power of 2?")
        ('2', '10')

    Articles are dropped ("a manager thanks an employee" / "an employee thanks a manager"), but
    where that leaves the two parts side by side, as a compound would be, they are read again
    with them ("is a square a rectangle": the article was all that stood between). English
    contractions are spelt out ("what's" / "what is")."""
    words_a, words_b = _EXCHANGE_TOKEN.findall(_spelt_out(a.lower())), _EXCHANGE_TOKEN.findall(_spelt_out(b.lower()))
    found = _exchanged([t for t in words_a if t not in _ARTICLES], [t for t in words_b if t not in _ARTICLES])
    if found is None and (_ARTICLES & set(words_a)):
        found = _exchanged(words_a, words_b)
    return found


# A conversion or a move names what it starts from and what it ends as: "convert X to Y",
# "from X to Y", "把X转成Y", "X怎么转换为Y", "word转pdf". X and Y are read with their modifiers.
_CONVERT_EN = re.compile(r"\b(?:convert(?:ing)?|chang(?:e|ing)|turn(?:ing)?|translat(?:e|ing)|transform(?:ing)?|"
                         r"export(?:ing)?|switch(?:ing)?|migrat(?:e|ing)|mov(?:e|ing)|transfer(?:ring)?|"
                         r"cop(?:y|ying)|upload(?:ing)?|download(?:ing)?|"
                         r"port(?:ing)?|from)\s+(?P<x>[\w.+#'-]+(?:\s+[\w.+#'-]+){0,5}?)\s+(?:to|into|onto)\s+"
                         r"(?P<y>[\w.+#'-]+(?:\s+[\w.+#'-]+){0,3})")
# Where a part ends: what follows is how or why, not what it becomes.
_PART_END = frozenset("without with using in on for and so while because but via by then if when that which "
                      "or than from".split())
# Not a direction: a distance or a sum is the same both ways, and a part that asks an amount
# ("how much yuan buys 1000 yen") is the other's price; numbers alone are left to the
# quantity rules.
_SYMMETRIC = re.compile(r"\bhow far\b|\bdistance\b|距离|多远|多少公里|\bsum\b|\btotal\b|之和|的和")
_ASKS_AMOUNT = re.compile(r"多少|几|\bhow (?:much|many)\b")
_CLAUSE = r"[^，。？！；,.?!;]"
_CONVERT_ZH = (
    re.compile(rf"(?:把|将)(?P<x>{_CLAUSE}{{1,12}}?)(?:怎么|如何|怎样)?(?:转换|转化|转|翻译|换|导出|改|迁移|变)"
               rf"(?:成|为|到|至)(?P<y>{_CLAUSE}{{1,12}})"),
    # A copy or a move names where from and where to: "把本地的文件同步到服务器" / "… 服务器的 … 到本地".
    # Places are often paths: longer parts than a format's.
    re.compile(rf"(?:把|将)(?P<x>{_CLAUSE}{{1,24}}?)(?:怎么|如何|怎样)?(?:同步|复制|拷贝|移动|上传|下载|传输|备份)"
               rf"(?:到|至)(?P<y>{_CLAUSE}{{1,24}})"),
    re.compile(rf"(?P<x>{_CLAUSE}{{1,12}}?)(?:怎么|如何|怎样|要|能)?(?:转换|转化|翻译|转|换)(?:成|为)"
               rf"(?P<y>{_CLAUSE}{{1,12}})"),
    re.compile(rf"从(?P<x>{_CLAUSE}{{1,10}}?)(?:转到|迁移到|换到|到|至)(?P<y>{_CLAUSE}{{1,10}})"),
    # Money moved from one account to another: "支付宝余额怎么转到银行卡" / "银行卡的钱怎么转到支付宝余额".
    re.compile(rf"(?P<x>{_CLAUSE}{{1,12}}?)(?:怎么|如何|怎样|要|能|可以)?(?:转到|转入|转进|转出到|转钱到|转账到|提现到|充值到|存到|划到|划转到)"
               rf"(?P<y>{_CLAUSE}{{1,12}})"),
    re.compile(r"(?<![a-z0-9.+#])(?P<x>[a-z0-9][a-z0-9.+#]*)(?:怎么|如何)?转(?P<y>[a-z0-9][a-z0-9.+#]*)"),
)
_ZH_PART_NOISE = re.compile(r"怎么|如何|怎样|请问|我想|帮我|能不能|可以|我的|你的|这个|那个|这段|这张|这份|"
                            r"一段|一个|一张|一份|的|吗|呢|啊|吧|呀")
_LATIN = re.compile(r"[a-z0-9](?:[a-z0-9.+#]|['-](?=[a-z0-9]))*")


def _terms(part: str) -> frozenset[str]:
    """What names a part: its words (English), its Latin words and character pairs (Chinese)."""
    if re.search(r"[\u3400-\u9fff]", part):
        part = _ZH_PART_NOISE.sub(" ", part)
        terms = set(_LATIN.findall(part))
        for run in re.findall(r"[\u3400-\u9fff]+", part):
            terms.update(run[i:i + 2] for i in range(max(1, len(run) - 1)))
        return frozenset(terms)
    return frozenset(w.removesuffix("'s") for w in _LATIN.findall(part) if w not in _DETERMINERS)   # phone's: phone


@lru_cache(maxsize=4096)
def _conversion(text: str) -> tuple[tuple[str, frozenset[str]], tuple[str, frozenset[str]]] | None:
    """What a conversion or a move in ``text`` starts from and ends as: each part's words and
    terms ("switch my plan to annual from monthly": from "monthly", to "annual")."""
    if _SYMMETRIC.search(text):
        return None
    m = _CONVERT_EN.search(text)
    if m:
        x = m["x"].rsplit(" from ", 1)[-1].removeprefix("from ")
        # The target's words up to where it ends, then "to Y from X": X is what it starts from.
        words = _LATIN.findall(text[m.start("y"):m.start("y") + 120])
        y, i = [], 0
        while i < len(words) and i < 4 and words[i] not in _PART_END:
            y.append(words[i])
            i += 1
        if i < len(words) and words[i] == "from":
            source = []
            for word in words[i + 1:i + 5]:
                if word in _PART_END:
                    break
                source.append(word)
            x = " ".join(source)
        parts = x, " ".join(y)
    else:
        m = next((m for p in _CONVERT_ZH if (m := p.search(text))), None)
        if m is None:
            return None
        parts = m["x"], m["y"]
    if any(_ASKS_AMOUNT.search(part) for part in parts):
        return None
    found = tuple((part.strip(), _terms(part)) for part in parts)
    if not all(terms for _, terms in found) or any(all(t.isdigit() for t in terms) for _, terms in found):
        return None
    return found


def _overlap(p: frozenset[str], q: frozenset[str]) -> float:
    return len(p & q) / min(len(p), len(q))


def conversion_reversed(a: str, b: str) -> tuple[str, str] | None:
    """A conversion or a move the other way round, its parts worded as they may be: what one
    request converts from is what the other converts to, and the other way ("an MP4 video to
    MP3" / "MP3 audio into an MP4", "把Excel表格转成PDF" / "把PDF文件转换成Excel"). Both parts
    must cross over, and more than either stays where it was: another target alone ("to
    WAV") or the same direction reworded is none. Returns the first request's parts.

        >>> conversion_reversed("how do i convert a word document to pdf?", "how do i convert a pdf to word?")
        ('a word document', 'pdf')
        >>> conversion_reversed("how do i convert a word document to pdf?", "convert word files into pdf") is None
        True
    """
    found_a, found_b = _conversion(a), _conversion(b)
    if found_a is None or found_b is None:
        return None
    ((from_a, xa), (to_a, ya)), ((_, xb), (_, yb)) = found_a, found_b
    crossed = min(_overlap(xa, yb), _overlap(ya, xb))
    straight = max(_overlap(xa, xb), _overlap(ya, yb))
    if crossed >= 0.5 and crossed > straight:
        return from_a, to_a
    return None


# A long unbroken string names exactly one thing: a DNA or protein sequence, a hash, a key, a
# URL, a path. One replaced by another is another request, however alike the words around it
# (two 1,400-letter sequences after one instruction read as the same to every vector). A run
# of letters and hyphens ("state-of-the-art") is a word unless it is very long.
_PAYLOAD = re.compile(r"[a-z0-9][a-z0-9_./:+=%#?&@~-]{15,}")
_PAYLOAD_MARK = re.compile(r"[\d_./:+=%#?&@~]")


def _payloads(text: str) -> frozenset[str]:
    found = (p.rstrip(".?:,") for p in _PAYLOAD.findall(text))
    return frozenset(p for p in found if len(p) >= 30 or (len(p) >= 16 and _PAYLOAD_MARK.search(p)))


def payload_replaced(a: str, b: str) -> tuple[str, str] | None:
    """A long unbroken string of one request replaced by another in the other: ('the first
    request's', 'the other's'), or None.

        >>> payload_replaced("summarise https://example.com/blog/cache-notes", "summarise https://example.com/blog/queue-notes")
        ('https://example.com/blog/cache-notes', 'https://example.com/blog/queue-notes')
        >>> payload_replaced("what is a state-of-the-art cache?", "which caches are state-of-the-art?") is None
        True
    """
    pa, pb = _payloads(a), _payloads(b)
    gone, new = pa - pb, pb - pa
    return (min(gone), min(new)) if gone and new else None


# One item, or every one of them: "the invoice for one order" is not "invoices for all my orders".
# Each side must say it (an article says nothing: "cancel an order" may mean any order) about the
# same noun; idioms of manner ("in one go", "at all", "all-in-one", "one of the best") say nothing.
# Not a word's first half ("all-day", "one-day"), nor "all in one".
_EVERY_EN = re.compile(r"(?<!\bat )(?<!\bafter )(?<!\babove )(?<!\bfirst of )\b(?:all|every|multiple|several|bulk)\b"
                       r"(?!-)(?! in[- ]one\b)(?! right\b)(?! the time\b)(?! of a sudden\b)(?! over\b)")
# Not "one" the pronoun ("what does one need"), "every single", "all individual", where things
# are merged to ("into one file"), "one of the best", "one by one", "one another".
_ONE_EN = re.compile(r"(?<!\bdoes )(?<!\bdo )(?<!\bcan )(?<!\bshould )(?<!\bwould )(?<!\bcould )(?<!\bmust )"
                     r"(?<!\bwill )(?<!\bmay )(?<!\bif )(?<!\bwhen )(?<!\bevery )(?<!\beach )(?<!\ball )"
                     r"(?<!\binto )(?<!\binto a )"
                     r"\b(?:one|a single|single|an individual|individual|a specific|a particular)\b"
                     r"(?!-)(?! of the (?:\w+est|most|top|few|many)\b)(?! by\b)(?! another\b)(?! more\b)")
_EVERY_ZH = re.compile(r"所有|全部|批量|多个|全体")
# Measure words of countable things; not 笔 or 次, which also say how a thing is done (一笔还清,
# 一次付清: in one go). 1个 is how normalisation writes 一个; not 每1个 (every one), 第1个 (the
# first), 合并成1个 (merged into one), 任何1个 (any one).
_ONE_ZH = re.compile(r"单个|单张|单条|(?<!每)某个|某[一1]个|(?<![\d.每第成为])(?<!任何)(?<!任意)[一1](?:个|条|张|份|封|篇|件|台|项|位)")
# Words that name nothing of their own: left out of a part's terms and of a quantified noun.
_DETERMINERS = frozenset("the my your our their these those this that his her its of a an".split())
_NOT_NOUNS = _DETERMINERS | {"one", "single", "individual"}     # "all individual files": files
# Words of three letters or more: the noun a quantifier is said of, an adjective compared.
_WORD = re.compile(r"[a-z]{3,}")


def _noun(word: str) -> str:
    """A plural read as its singular ("orders", "entries"): enough to tell one noun from another."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


@lru_cache(maxsize=8192)
def _quantified(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(nouns said of one item, nouns said of all): English nouns singular, the first word after
    the quantifier and its determiners; Chinese ones as their first two characters (单个订单 ->
    订单) and, for "all", every two characters of the clause that follows (批量取消订单 holds 订单)."""
    one: set[str] = set()
    every: set[str] = set()
    for m in _ONE_EN.finditer(text):
        words = [w for w in _WORD.findall(text[m.end():m.end() + 40])[:3] if w not in _DETERMINERS]
        if words:
            one.add(_noun(words[0]))
    for m in _EVERY_EN.finditer(text):      # the noun it quantifies: "all (of) my orders"
        words = [w for w in _WORD.findall(text[m.end():m.end() + 50])[:4] if w not in _NOT_NOUNS]
        if words:
            every.add(_noun(words[0]))
    for m in _ONE_ZH.finditer(text):
        after = text[m.end():m.end() + 3].lstrip("的")
        if len(after) >= 2 and all("\u4e00" <= c <= "\u9fff" for c in after[:2]):
            one.add(after[:2])
    for m in _EVERY_ZH.finditer(text):
        clause = re.split(r"[，,。.？?！!；;]", text[m.end():m.end() + 10], maxsplit=1)[0]
        every |= {clause[i:i + 2] for i in range(len(clause) - 1)}
    return frozenset(one), frozenset(every)


def quantifier_changed(a: str, b: str) -> tuple[str, str] | None:
    """One request about one item where the other is about all of them (either way round):
    (what ``a`` says, what ``b`` says), or None. A side that says both of one noun ("merge
    several sheets into one sheet") changes nothing.

        >>> quantifier_changed("how do i download the invoice for one order?", "how do i download invoices for all my orders?")
        ('one order', 'all order')
        >>> quantifier_changed("can i pay for all orders in one go?", "can i pay for all my orders at once?") is None
        True
    """
    one_a, every_a = _quantified(a)
    one_b, every_b = _quantified(b)
    for noun in sorted(one_a & every_b):
        if noun not in every_a and noun not in one_b:
            return f"one {noun}", f"all {noun}"
    for noun in sorted(one_b & every_a):
        if noun not in every_b and noun not in one_a:
            return f"all {noun}", f"one {noun}"
    return None


# "what's" / "what is", "isn't" / "is not": the same words spelt two ways.
_CONTRACTIONS = ((re.compile(r"\b(what|where|who|how|it|that|there|here|which|when|why)'s\b"), r"\1 is"),
                 (re.compile(r"\b(can)'t\b"), r"\1 not"), (re.compile(r"\bwon't\b"), "will not"),
                 (re.compile(r"n't\b"), " not"), (re.compile(r"'re\b"), " are"), (re.compile(r"\bi'm\b"), "i am"),
                 (re.compile(r"'ll\b"), " will"), (re.compile(r"'ve\b"), " have"))


def _spelt_out(text: str) -> str:
    if "'" not in text:
        return text
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return text


def _exchanged(ta: list[str], tb: list[str]) -> tuple[str, str] | None:
    if ta == tb or sorted(ta) != sorted(tb):
        return None
    start = 0
    while ta[start] == tb[start]:
        start += 1
    end = 0
    while ta[-1 - end] == tb[-1 - end]:
        end += 1
    ma, mb = ta[start:len(ta) - end], tb[start:len(tb) - end]
    if len(ma) > 2 * _EXCHANGE_SPAN + 4:
        return None
    joiner = lambda toks: ("" if all(len(t) == 1 and t >= "\u3400" for t in toks) else " ").join(toks)
    for i in range(1, len(ma)):
        for j in range(i + 1, len(ma)):
            x, gap, y = ma[:i], ma[i:j], ma[j:]
            if y + gap + x != mb or len(x) > _EXCHANGE_SPAN or len(y) > _EXCHANGE_SPAN:
                continue
            if any(t in _CLAUSE_MARKS for t in x + gap + y) or any(t in _SYMMETRIC_WORDS for t in gap) \
                    or _SYMMETRIC_ZH.search(joiner(gap)):
                continue
            if all(t in _FILLER or t in _QUESTION_WORDS for t in x + y):
                continue
            return joiner(x), joiner(y)
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
    for op, i1, i2, j1, j2 in diff(ta, tb).opcodes:
        if op != "replace":
            continue
        mine, theirs = set(ta[i1:i2]), set(tb[j1:j2])
        for x in mine - theirs:
            for y in theirs - mine:
                if frozenset((x, y)) in _OPPOSITES:
                    return x, y
    return None


_VOWELS = frozenset("aeiou")


def _comparatives(adjective: str) -> frozenset[str]:
    """The -er forms an English adjective can take: spicy -> spicier, safe -> safer,
    big -> bigger, formal -> formaler (never a word, so never met)."""
    forms = {adjective + "er"}
    if adjective.endswith("e"):
        forms.add(adjective + "r")
    if adjective.endswith("y"):
        forms.add(adjective[:-1] + "ier")
    if len(adjective) >= 3 and adjective[-1] not in _VOWELS | {"w", "x", "y"} and adjective[-2] in _VOWELS \
            and adjective[-3] not in _VOWELS:
        forms.add(adjective + adjective[-1] + "er")
    return frozenset(forms)


def comparative_reversed(a: str, b: str) -> tuple[str, str] | None:
    """One request asks for "less X" where the other asks for X's -er form ("make it less
    spicy" / "make it spicier"): opposite directions of one quality. "more X" against "less X"
    is the lexicon's stance pair already, and "X-er" against "more X" asks the same.

    >>> comparative_reversed("How do I make it spicier?", "How do I make it less spicy?")
    ('spicier', 'less spicy')
    >>> comparative_reversed("Make the loop faster", "Make the loop run faster") is None
    True
    """
    words_a, words_b = a.lower().split(), b.lower().split()
    clean = lambda w: w.strip(".,;:!?\"'()")
    for first, second in ((words_a, words_b), (words_b, words_a)):
        other = [clean(w) for w in second]
        other_text, other_words = " ".join(other), set(other)
        for i, word in enumerate(first[:-1]):
            quality = clean(first[i + 1])
            if clean(word) != "less" or not _WORD.fullmatch(quality):
                continue
            if f"less {quality}" in other_text:
                continue        # both ask for less of it
            found = _comparatives(quality) & other_words
            if found:
                pair = (min(found), f"less {quality}")
                return pair if first is words_b else (pair[1], pair[0])
    return None


def _order_swapped(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return len(a) >= 2 and sorted(a) == sorted(b) and list(a) != list(b)
