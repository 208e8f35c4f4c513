"""Near-exact: two turns that differ only by typos and courtesy are one request.

Users retype what they asked with a slip of the keyboard or the IME ("adress",
"recieve", 以经 for 已经), with "please" or 请问 added, or with another case and
punctuation (normalisation has taken care of those). Such a repeat is the same
request, and no model's doubt about it should make it a miss. What changes meaning is
never a typo: a digit, a negation, an opposite word, another real word.

The two texts are cut into tokens (English words, digit groups, single CJK
characters), courtesy is dropped at either end (lexicon kind ``courtesy``) or anywhere
(``courtesy_inner``), and the token sequences are aligned (rapidfuzz). Every difference must then be one of:

- a typo of one word for another, English, never a word of a spelling dictionary (``_typo``):
  a string ``wordfreq``'s list does not hold, one slip of the fingers from a word (a letter
  dropped, doubled, two swapped, a neighbouring key), where a slip may fall (not where names
  begin or end with a letter more: fgets, printf); two letters of one of the commonest words
  swapped ("hte"); or both words start alike, have five letters or more (four for a letter
  typed twice: "vissa"), are within one edit (two from seven letters), and the rarer is
  under zipf 2.5, at least 1.5 below a word of 2.5 or more ("recieve" 2.75 / "receive" 4.85;
  "broil" 2.44 / "boil" 3.83 are two words; "form" / "from" too);
- a Chinese IME slip (``_ime_slip``): characters the lexicon groups as slips for each
  other (kind ``confusable``: 的/得/地, 在/再...), or one character for another of the same
  syllable, any tone, where one side makes a dictionary word and the other does not (以经 /
  已经, 这此 / 这次), or a lone character for one of the same syllable and tone; never two
  words (权利 / 权力), the lexicon's opposite characters (买 / 卖) nor one pronoun for
  another (他 / 她);
- an English word typed twice, a Chinese character typed twice where the two are no entry of
  jieba's dictionary (屏幕幕; not 人人, nor 下下周), a dropped or added particle (的 呢 吧 啊 呀
  嘛) or article (the);
- read again where the words as typed are no repeat (``spelt_out``): a contraction spelt out
  ("what's" / "what is", "don't" / "do not") and the frame of a question (lexicon kind
  ``question_frame``: how do i / how can i / how does one / how to, 如何 / 怎样 / 怎么, 为啥 /
  为什么), never in a turn that quotes, holds code or asks about words, text or titles
  (``_ABOUT_WORDS``), and with the same negators;
- words run together or apart ("e mail" / "email");
- one word's British and American spellings (``breame``'s table, where the two differ in a
  regular way: practise / practice, colour / color, travelled / traveled), never two words
  (tonne / ton, two units; prologue / Prolog).

No digit group and no negator may change, no symbol (brackets, operators, currency signs,
underscores: ``_symbols``), and a turn may hold at most 1 + n/5 typos
(n its tokens; at most 3). The caller compares what the rules extracted besides
(negations, opposite actions, numbers) before serving.

    >>> bool(near_exact("how do i change the email adress on my acount", "how do i change the email address on my account"))
    True
    >>> near_exact("how do i encrypt this file", "how do i decrypt this file") is None
    True
    >>> bool(near_exact("我以经付款了，怎么查物流", "我已经付款了，怎么查物流")), near_exact("公民的权利", "公民的权力") is None
    (True, True)
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Sequence

from breame.spelling import get_american_spelling
from rapidfuzz.distance import OSA, Levenshtein

from smartcache.fingerprint import ChangeFlag, Signature
from smartcache.fingerprint.lexicon import asking_parts, concepts_of_kind, word_opposites, words_of_kind

# A "+" or "#" glued to a word or a number is part of it: C++ and C#, Disney+, an A+ grade, "5+
# years" name other things than C, Disney, an A and 5.
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)*[+#]*|\d+(?:[.,:]\d+)*[+#]*|[\u3400-\u9fff]|[^\W\d_a-z\u3400-\u9fff]+")
_CJK = re.compile(r"[\u3400-\u9fff]")
# What the words alone cannot tell apart must match, character for character and in order:
# brackets, operators, currency signs, underscores ("what does ~ mean" / "… % …", "x>0" / "x<0",
# "__str__" / "str", "$5" / "€5"). Not sentence punctuation, a hyphen inside a word ("e-mail",
# "low-budget"), a dash between two words ("email - which is correct"), nor an emoticon or a
# tilde at the very end ("…? (:", "谢谢~").
_SENTENCE = frozenset(",.!?;:'\"，。！？；：、…“”‘’")
_NOT_SYMBOLS = re.compile(r"(?<=[a-z\u3400-\u9fff])[—–-]+(?=[a-z\u3400-\u9fff])"
                          r"|(?<=[a-z\u3400-\u9fff]{2}) [—–-]+ (?=[a-z\u3400-\u9fff]{2})")
_DECORATION = re.compile(r"\s*(?:\(:|\):|:\)|:\(|:/|=\]|=\)|;\)|\^\^|[~*]+)[\s.!?？！。]*$")


@functools.lru_cache(maxsize=8192)
def _symbols(text: str) -> tuple[str, ...]:
    # A dot inside a name is how it is written, not what it is ("node.js" / "nodejs", "b.tech").
    text = _NOT_SYMBOLS.sub(" ", _DECORATION.sub("", text))
    return tuple(c for c in text if not (c.isalnum() or c.isspace() or c in _SENTENCE))


# Not 吗 (a question, not a statement), nor "a" / "an" ("hepatitis a vaccine").
_DROPPABLE = frozenset({"的", "呢", "吧", "啊", "呀", "嘛", "the"})
# Never a typo of anything: a negator typed or dropped flips the request.
_NEGATORS = frozenset({"不", "没", "别", "无", "非", "未", "否", "勿", "莫",
                       "no", "not", "never", "nor", "none", "dont", "doesnt", "didnt", "cant", "wont", "isnt",
                       "arent", "wasnt", "werent", "shouldnt", "couldnt", "wouldnt", "havent", "hasnt"})
_KNOWN_ZIPF = 3.3      # "teh" 3.0, "adress" 2.4, "definately" 2.9; "parma" 3.0, "bake" 3.9, "form" 5.3
# A slip is far rarer than what was meant: "recieve" 2.75 / "receive" 4.85, "adress" 2.39 / 4.91;
# two rare real words are not ("broil" 2.44 / "boil" 3.83).
_SLIP_GAP = 1.5
# ... and rare itself: a rare real word is not a slip for a common one ("statin" 2.54 / "station",
# "cron" / "crop"), at the price of common misspellings ("recieve" 2.75) left to the verifier.
_SLIP_ZIPF = 2.5
_MEANT_ZIPF = 2.5      # "burst" 4.15, "pythagorean" 2.57; not "ethane" 2.37 nor "australias" 1.86
_COMMON_ZIPF = 5.0     # "the" 7.4, "how" 6.4, "you" 6.9, "are" 6.5, "why" 5.8


@dataclass(frozen=True)
class NearExact:
    """What separates the two texts: ``edits`` for people ("adress→address", "+please")."""

    edits: tuple[str, ...]

    def __bool__(self) -> bool:
        return True

    def describe(self) -> str:
        return ", ".join(self.edits) if self.edits else "case, punctuation or spacing"


@functools.lru_cache(maxsize=3)
def _courtesy(kind: str = "courtesy") -> tuple[tuple[str, ...], ...]:
    """Courtesy phrases as token sequences, longest first (so "thank you" goes before "thank")."""
    phrases = {tuple(t.replace("'", "") for t in _TOKEN.findall(w.lower())) for w in words_of_kind(kind)}
    return tuple(sorted((p for p in phrases if p), key=lambda p: (-len(p), p)))


def tokens(text: str) -> tuple[str, ...]:
    """The tokens of a normalised text, apostrophes dropped ("i'm" is "im"), courtesy dropped:
    a clause of courtesy alone at either end ("hi, …", "…, thanks"), or its inner kind anywhere
    ("please", 一下, 请问). A courtesy word inside a clause may be what is asked about ("how do you
    say thank you", "谢谢用日语怎么说"), so it stays. Memoised up to ``_MEMO_CHARS`` characters
    (a tuple, so no caller changes a shared result): a cached turn is read again by every lookup
    it is a candidate of, and a long one would hold a hundred kilobytes of strings."""
    return _short_tokens(text) if len(text) <= _MEMO_CHARS else _tokens_of(text)


def spelt_out(text: str) -> tuple[str, ...]:
    """``tokens`` with each contraction spelt out (``_SPELT_OUT``: "what's" is "what is", "don't"
    "do not") and each frame of a question read as its concept's first member (``_framed``)."""
    return _short_spelt(text) if len(text) <= _MEMO_CHARS else _spelt_of(text)


_MEMO_CHARS = 200


def _tokens_of(text: str, spell: bool = False) -> tuple[str, ...]:
    clauses = [c for c in _CLAUSE.split(text.lower()) if c.strip()]
    opened = False
    while len(clauses) > 1 and _is_courtesy(clauses[0]):
        clauses, opened = clauses[1:], True
    if opened:      # "sorry to bother you, but how do i …": the "but" only followed the courtesy
        clauses[0] = _AFTER_COURTESY.sub("", clauses[0])
    while len(clauses) > 1 and _is_courtesy(clauses[-1]):
        clauses = clauses[:-1]
    clauses = [_asked(c) for c in clauses]
    words = _TOKEN.findall(" ".join(clauses))
    if spell:
        words = [w for t in words for w in _SPELT_OUT.get(t, (t,))]
    return tuple(_drop_inner(_drop_lead([t.replace("'", "") for t in words])))


_short_tokens = functools.lru_cache(maxsize=8192)(_tokens_of)


def _spelt_of(text: str) -> tuple[str, ...]:
    return _framed(_tokens_of(text, spell=True))


_short_spelt = functools.lru_cache(maxsize=8192)(_spelt_of)


def _spelt_out_table() -> dict[str, tuple[str, ...]]:
    """Contractions and what they spell out. Typed without the apostrophe where the string is
    nothing else ("whats", "dont", "im"); with it only where it stands for another word ("it's" /
    "its", "we're" / "were", "i'll" / "ill", "we'll" / "well", "let's" / "lets"). Not "he's" /
    "she's" (is or has) nor "'d" (would or had)."""
    table: dict[str, tuple[str, ...]] = {}
    both = {"what's": "what is", "how's": "how is", "where's": "where is", "who's": "who is", "when's": "when is",
            "why's": "why is", "that's": "that is", "there's": "there is", "here's": "here is", "i'm": "i am",
            "you're": "you are", "they're": "they are", "i've": "i have", "you've": "you have", "we've": "we have",
            "they've": "they have", "you'll": "you will", "they'll": "they will", "don't": "do not",
            "doesn't": "does not", "didn't": "did not", "isn't": "is not", "aren't": "are not", "wasn't": "was not",
            "weren't": "were not", "can't": "can not", "won't": "will not", "shouldn't": "should not",
            "couldn't": "could not", "wouldn't": "would not", "haven't": "have not", "hasn't": "has not",
            "hadn't": "had not", "mustn't": "must not", "needn't": "need not"}
    with_apostrophe = {"it's": "it is", "we're": "we are", "i'll": "i will", "we'll": "we will", "let's": "let us"}
    for short, long in both.items():
        table[short] = table[short.replace("'", "")] = tuple(long.split())
    for short, long in with_apostrophe.items():
        table[short] = tuple(long.split())
    table["cannot"] = ("can", "not")
    return table


_SPELT_OUT = _spelt_out_table()
_CLOSING_MA = re.compile(r"吗[\s啊呀呢哈]*$")


@functools.lru_cache(maxsize=1)
def _asking() -> re.Pattern[str]:
    return re.compile("|".join(asking_parts()))


# What makes a question word a statement's in its clause: any at all, a 都 or 也 after it
# (什么时候吃都可以; not 成都's), 无论 / 不管; or a negation (没有什么问题, 你不觉得有什么不对);
# not the negator inside an A-not-A question (有没有, 能不能, 可不可以), which asks.
_STATEMENT = re.compile(r"(?:什么|怎么|哪|多少|谁|几)[^,]*?[都也]|[不没别]|无论|不管|不论")
_A_NOT_A = re.compile(r"([\u3400-\u9fff])[不没]\1|可不可")


def _asked(clause: str) -> str:
    """A clause without the 吗 that closes it where a question word already asks (有什么好方法吗
    is 有什么好方法; lexicon kind ``asking``); a clause that only 吗 makes a question keeps it,
    and so does one that reads as a statement (``_STATEMENT``)."""
    closing = _CLOSING_MA.search(clause)
    if closing is None:
        return clause
    body = clause[:closing.start()]
    return body if _asking().search(body) and not _STATEMENT.search(_A_NOT_A.sub("", body)) else clause


def _drop_lead(out: list[str]) -> list[str]:
    """``out`` without the courtesy that opens a request (``courtesy_lead``: "could you",
    能不能帮我), the longest first, when at least two tokens of the request follow it."""
    for phrase in _courtesy("courtesy_lead"):
        n = len(phrase)
        if tuple(out[:n]) == phrase and len(out) >= n + 2:
            return out[n:]
    return out


def _drop_inner(out: list[str]) -> list[str]:
    """``out`` without its inner courtesy (``courtesy_inner``), in place."""
    # Left to right, the longest phrase at each place first: "could you please tell me" loses
    # "could you please" and then "tell me", never "please tell me" leaving "could you" behind.
    k = 0
    starting = _courtesy_starting()
    while k < len(out):
        for phrase in starting.get(out[k], ()):
            n = len(phrase)
            # Not a span of a longer word: 一下子 (all at once) keeps its 一下.
            if tuple(out[k:k + n]) == phrase and not (k + n < len(out) and out[k + n] == "子"):
                del out[k:k + n]
                break
        else:
            k += 1
    return out


# Within two words after a frame, these make it ask something else: how someone feels or looks
# ("how do i really feel about him", "how do i look"), not how a thing is done; and after 怎么,
# a negator or a particle (怎么不更新 asks why, 怎么了 what is wrong, 怎么样 how good).
_NOT_A_METHOD = frozenset({"feel", "feels", "like", "think", "rate", "see", "view", "find", "do", "mean", "look",
                           "sound", "seem", "appear", "不", "没", "别", "无", "未", "了", "呢", "啊", "吧", "呀", "啦",
                           "样", "回", "舌"})


def _framed(words: tuple[str, ...]) -> tuple[str, ...]:
    """``words`` with each frame of a question (lexicon kind ``question_frame``) read as its
    concept's first member: "how can i learn biology" asks what "how do i learn biology" and "how
    to learn biology" ask, 如何冻结首行 what 怎么冻结首行 asks, 为啥 what 为什么 asks. Not at the
    end of a turn (这家店如何 is how good the shop is), nor within two words of what makes it ask
    something else (``_NOT_A_METHOD``: "how do i really feel", 怎么不, 怎么了). Read only where
    the words as typed are no repeat (a word typed twice or run together beside a frame stays
    so)."""
    frames = _frames()
    out, k = list(words), 0
    while k < len(out):
        for frame, canonical in frames.get(out[k], ()):
            n = len(frame)
            if tuple(out[k:k + n]) == frame and k + n < len(out) and not _NOT_A_METHOD & set(out[k + n:k + n + 2]):
                out[k:k + n] = canonical
                k += len(canonical) - 1
                break
        k += 1
    return tuple(out)


@functools.lru_cache(maxsize=1)
def _frames() -> dict[str, tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]]:
    """Each frame's tokens and its concept's first member's, by the frame's first token, the
    longest frame first."""
    by_first: dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    split = lambda w: tuple(t.replace("'", "") for t in _TOKEN.findall(w.lower()))
    for members in concepts_of_kind("question_frame"):
        canonical = split(members[0])
        for frame in map(split, members):
            by_first.setdefault(frame[0], []).append((frame, canonical))
    return {first: tuple(sorted(fs, key=lambda f: -len(f[0]))) for first, fs in by_first.items()}


@functools.lru_cache(maxsize=1)
def _courtesy_starting() -> dict[str, tuple[tuple[str, ...], ...]]:
    """The inner courtesy phrases by their first token, each token's longest first as in
    ``_courtesy``: only those can match where that token stands."""
    starting: dict[str, list[tuple[str, ...]]] = {}
    for phrase in _courtesy("courtesy_inner"):
        starting.setdefault(phrase[0], []).append(phrase)
    return {token: tuple(phrases) for token, phrases in starting.items()}


_AFTER_COURTESY = re.compile(r"^\s*(?:but|so|and)\s+")
# Where a clause ends: not ":" ("translate to french: thank you" asks about the words after it).
_CLAUSE = re.compile(r"[,!.;?\n]+")


# What ends a clause of courtesy without adding to it: 谢谢啦, 麻烦你了, 好的哈.
_CLOSING_PARTICLES = frozenset("啦呀哈哦啊呢吧嘛了哟喔")


def _is_courtesy(clause: str) -> bool:
    """Whether a clause is courtesy and nothing else ("hi", "thanks a lot", "谢谢"), its inner
    courtesy ("麻烦问一下" is 麻烦) and closing particles ("谢谢你啦") aside."""
    words = tuple(t.replace("'", "") for t in _TOKEN.findall(clause))
    if not words:
        return False
    known = set(_courtesy())
    if words in known:
        return True
    inner = _drop_inner(list(words))
    while inner and inner[-1] in _CLOSING_PARTICLES and tuple(inner) not in known:
        inner.pop()
    return bool(inner) and tuple(inner) in known


def near_exact(a: str, b: str) -> NearExact | None:
    """Whether two normalised turns differ only by typos and courtesy (None: they may differ)."""
    if a == b:
        return NearExact(())
    # Symbols are what some requests ask about ("what does ~ mean in C++" / "… % …", "() and []"
    # / "= and ==", "$5" / "€5"): the words alone cannot tell them apart, so they must match.
    if _symbols(a) != _symbols(b):
        return None
    ta, tb = tokens(a), tokens(b)
    found = _compared(a, b, ta, tb)
    if found is None and not (_ABOUT_WORDS.search(a) or _ABOUT_WORDS.search(b)):
        # The same question with its contractions spelt out, or in another frame; a slip is
        # counted against the words as typed (a frame spelt longer allows no more of them), and
        # the negators must be the same ones ("isn't not" is no "is not").
        fa, fb = spelt_out(a), spelt_out(b)
        if (fa, fb) != (ta, tb) and _negators(a) == _negators(b):
            found = _compared(a, b, fa, fb, size=max(len(ta), len(tb)))
            if found is not None:
                found = NearExact(("another form of the question",) + found.edits)
    return found


# A turn that quotes something, holds code, or asks about words, text or titles themselves: a
# contraction or a frame is then what is asked about ("is 'i'm' correct", "what does can't mean",
# "can i use don't in a formal essay", "grep lines containing can't", "who sang i'll be there").
_ABOUT_WORDS = re.compile(r"[\"“”「」『』`]|(?<![a-z])'|'(?![a-z])|\b(?:grammar|grammatical\w*|correct|incorrect|"
                          r"pronounc\w*|spell\w*|contraction\w*|sentence|phrase|word|words|mean|means|meaning|"
                          r"say|says|said|saying|translat\w*|formal|informal|essay|writing|grep|contain\w*|"
                          r"title\w*|song|songs|sang|sing|sung|lyrics?|quote\w*|album|poem)\b|"
                          r"语法|翻译|意思|怎么说|怎么读|怎么写|歌|书名|标题")


def _compared(a: str, b: str, ta: tuple[str, ...], tb: tuple[str, ...], size: int | None = None) -> NearExact | None:
    """``near_exact`` on two token sequences; ``size``: the typed length the slips are budgeted
    on, given for a second reading (``spelt_out``), whose words are no longer as typed: no words
    run together or apart are read there ("iam" is no "i am" spelt out of "im")."""
    typed = size is None
    if ta == tb:
        return NearExact(_courtesy_edits(a, b))
    if "".join(ta) == "".join(tb):          # run together or apart: "e mail" / "email"
        return NearExact(("spacing",)) if typed and _spacing(ta, tb) else None
    budget = 1 + (size if size is not None else max(len(ta), len(tb))) // 5
    edits: list[str] = []
    typos = 0
    for op, i1, i2, j1, j2 in Levenshtein.opcodes(ta, tb):
        if op == "equal":
            continue
        if op in ("delete", "insert"):
            seq, lo, hi = (ta, i1, i2) if op == "delete" else (tb, j1, j2)
            other, at = (tb, j1) if op == "delete" else (ta, i1)
            for k in range(lo, hi):
                if not _droppable(seq, k):
                    return None
                # A copy typed twice leaves one behind: 大小小于 is not 大于, "that that" not nothing.
                if seq[k] not in _DROPPABLE and seq[k] not in other[max(at - 1, 0):at + 1]:
                    return None
                edits.append(f"{'-' if op == 'delete' else '+'}{seq[k]}")
            continue
        if i2 - i1 != j2 - j1:
            if typed and "".join(ta[i1:i2]) == "".join(tb[j1:j2]) and _spacing(ta[i1:i2], tb[j1:j2]):
                edits.append("spacing")
                continue
            return None
        for k in range(i2 - i1):
            if not _typo(ta, i1 + k, tb, j1 + k):
                return None
            typos += 1
            edits.append(f"{ta[i1 + k]}→{tb[j1 + k]}")
    if typos > min(3, budget):
        return None
    return NearExact(tuple(edits))


def _spacing(ta: Sequence[str], tb: Sequence[str]) -> bool:
    """Words run together or apart ("e mail" / "email", "wi-fi" / "wifi"), unless both readings
    are words of the dictionary: "a part" / "apart", "the rapist" / "therapist", "re-sign" /
    "resign", "log in" / "login"."""
    while ta and tb and ta[0] == tb[0]:             # the stretch that differs
        ta, tb = ta[1:], tb[1:]
    while ta and tb and ta[-1] == tb[-1]:
        ta, tb = ta[:-1], tb[:-1]
    joined, split = (ta, tb) if len(ta) < len(tb) else (tb, ta)
    if len(joined) != 1 or not all(p.isascii() and p.isalpha() for p in split):
        return True
    return not (joined[0] in _dictionary() and all(p in _dictionary() and (len(p) > 1 or p in "ai") for p in split))


def near_exact_turns(a: Sequence[str], b: Sequence[str]) -> NearExact | None:
    """``near_exact`` turn by turn over two equally long lists of turns."""
    if len(a) != len(b):
        return None
    edits: list[str] = []
    for x, y in zip(a, b):
        found = near_exact(x, y)
        if found is None:
            return None
        edits += found.edits
    return NearExact(tuple(edits))


def near_repeat(request: Signature, cached: Signature) -> NearExact | None:
    """Whether a request repeats a cached one but for typos and courtesy: its turn and every
    prior turn (assistant turns byte for byte after normalisation, small talk aside), with the
    same negations, change flags and numbers as the rules read them, and no opposite action."""
    flags = request.flags ^ cached.flags
    # Opposite sides are never a slip. A side one turn names and the other does not is, once the
    # turns are one request but for slips: "folow" is no follow, and never "unfollow" (a word of
    # its own). Sides are positional: an entry written before the lexicon added pairs holds fewer.
    if any(p * q < 0 for p, q in zip(request.sides, cached.sides)) or flags - {ChangeFlag.NEGATION}:
        return None
    # The rules read a negation where a slip cuts a negator out of its word (辨别 / 辩别: 辩 and
    # 别); the path itself never edits a negator, so the same negators in the same order say that
    # is all it was.
    negation_read = request.negations != cached.negations or bool(flags)
    if _numbers(request.entities) != _numbers(cached.entities):
        return None
    found = near_exact(request.text, cached.text)
    if negation_read and (found is None or _negators(request.text) != _negators(cached.text)):
        return None
    if found is None or request.history_hash == cached.history_hash:
        return found
    mine, theirs = request.turns, cached.turns
    # Every prior turn must be on record (a long history keeps only its head and tail).
    if len(mine) != len(theirs) or any(r.pos != i + 1 for turns in (mine, theirs) for i, r in enumerate(turns)):
        return None
    edits = list(found.edits)
    for a, b in zip(mine, theirs):
        if a.role != b.role:
            return None
        # Small talk of the user's changes nothing; an assistant turn must be the same, short or not
        # ("Booked: 2 nights" after "ok" is a fact the answer rests on).
        if a.digest == b.digest or a.role == "user" and a.chatter and b.chatter:
            continue
        if a.role != "user" or "…" in a.excerpt + b.excerpt:
            return None
        turn = near_exact(a.excerpt.lower(), b.excerpt.lower())
        if turn is None:
            return None
        edits += turn.edits
    return NearExact(tuple(edits))


def _negators(text: str) -> tuple[str, ...]:
    """The negators in order, contractions spelt out ("don't" and "do not" both hold "not")."""
    return tuple(t for t in spelt_out(text) if t in _NEGATORS)


def _numbers(entities: Sequence[str]) -> list[str]:
    return sorted(e for e in entities if any(ch.isdigit() for ch in e))


def _courtesy_edits(a: str, b: str) -> tuple[str, ...]:
    wa, wb = _TOKEN.findall(a.lower()), _TOKEN.findall(b.lower())
    return tuple(f"-{w}" for w in wa if w not in wb) + tuple(f"+{w}" for w in wb if w not in wa)


def _droppable(seq: Sequence[str], k: int) -> bool:
    """A token whose absence changes nothing: a particle, an article, or one typed twice."""
    word = seq[k]
    if word in _DROPPABLE:
        return True
    doubled = (k > 0 and seq[k - 1] == word) or (k + 1 < len(seq) and seq[k + 1] == word)
    if not doubled:
        return False
    # An English word typed twice; a Chinese character typed twice where the two are no entry of
    # the dictionary at all (屏幕幕), never one that is, however rare (人人, 看看; 下下周 and 上上个月
    # count 3 and 6 and mean the week and month before last; jieba lists a word's prefixes too,
    # with count 0, and those count: 学学 keeps 大学学什么 apart from 大学什么), a negator, a
    # numeral (三三) or a position (后后, 左左: a doubled position is a further one). A doubling
    # across two words (列表|表) was tried at stop 39: 大学|学 and 小说|说 are cut the same way.
    if _CJK.fullmatch(word):
        return word not in _NEGATORS and word not in _NUMERALS and word not in _POSITIONS \
            and word * 2 not in _jieba().FREQ
    # Not a negator: "not not" is a double negative ("it isn't not working").
    return word.isascii() and word.isalpha() and word not in _NEGATORS


# The regular ways British and American spellings differ (colour / color, organise / organize,
# analyse / analyze, centre / center, fibre / fiber, travelled / traveled, fulfil / fulfill,
# anaemia / anemia, catalogue / catalog, defence / defense, programme / program, practise /
# practice, mould / mold, ageing / aging). A pair of breame's table that differs otherwise is two
# words it mapped (philtre / filter, groyne / groin, gauge / gage, draught / draft) or a slip of
# the table (tranquilly / tranquility).
_SPELLINGS = (("our", "or"), ("ou", "o"), ("s", "z"), ("tre", "ter"), ("bre", "ber"), ("ll", "l"), ("l", "ll"),
              ("ae", "e"), ("oe", "e"), ("ogue", "og"), ("ue", ""), ("ence", "ense"), ("mme", "m"), ("s", "c"),
              ("eing", "ing"))
# Regular pairs that are two words all the same: a metric tonne (1,000 kg) against a short ton
# (907 kg); a prologue against Prolog, a language; "analyses" is also the plural of analysis.
_TWO_WORDS = frozenset({"tonne", "tonnes", "prologue", "prologues", "analyses"})


def _spelt_apart(x: str, y: str) -> bool:
    """One word as British and American English spell it ("practise" / "practice", "colours" /
    "colors"): a pair of ``breame``'s table that differs in a regular way; the dictionary holds
    both, so no slip rule would take them."""
    if _TWO_WORDS & {x, y}:
        return False
    british, american = (x, y) if get_american_spelling(x) == y else (y, x) if get_american_spelling(y) == x \
        else (None, None)
    if british is None:
        return False
    return any(british[:i] + us + british[i + len(gb):] == american
               for gb, us in _SPELLINGS for i in range(len(british)) if british.startswith(gb, i))


def _typo(ta: Sequence[str], i: int, tb: Sequence[str], j: int) -> bool:
    x, y = ta[i], tb[j]
    if x in _NEGATORS or y in _NEGATORS or any(c.isdigit() for c in x + y):
        return False
    if _CJK.fullmatch(x) and _CJK.fullmatch(y):
        return _ime_slip(ta, i, tb, j)
    if not (x.isascii() and y.isascii() and x.isalpha() and y.isalpha()):
        return False
    if _spelt_apart(x, y):
        return True
    zx, zy = _zipf(x), _zipf(y)
    slip, meant = (x, y) if zx < zy else (y, x)
    z_slip, z_meant = min(zx, zy), max(zx, zy)
    # A word of the dictionary is a word of its own, however rare: "deign" is not "design",
    # "ficus" not "focus", "spay" not "spray".
    if slip in _dictionary():
        return False
    distance = OSA.distance(x, y)
    slipped = _keyboard_slip(slip, meant) if distance == 1 else None
    # A string no English list holds, one slip of the fingers from a word (a letter dropped,
    # doubled, two swapped, a neighbouring key), is a slip of it ("ocncentration", "alwys",
    # "hostar"), where a slip may fall (``_slip_placed``: not where names begin or end with a
    # letter more, fgets, popen, printf, argc); a three-letter word only swapped, and only the
    # commonest ("hwo").
    if z_slip == 0.0 < z_meant and slipped is not None and _slip_placed(slipped, meant, slip, unseen=True) \
            and (len(meant) >= 4 or z_meant >= _COMMON_ZIPF and slipped[0] == "swap"):
        return True
    # The commonest words are mistyped most, two letters swapped into a string rare enough to be
    # nothing else ("hte" 2.3, "waht" 2.0 for the, what); not "teh" 3.0, and no other slip: the
    # strings one key away are words and acronyms (GPT / got, OLS / old, awk / ask).
    if z_meant >= _COMMON_ZIPF and z_slip < _SLIP_ZIPF and slipped is not None and slipped[0] == "swap":
        return True
    # Else what was meant is a word people use: a rare one is a word of its own ("ethane" /
    # "ethene", "abash" / "abashed", "austrias" / "australias" with the apostrophes gone).
    if z_meant < _MEANT_ZIPF:
        return False
    # Short words are each other's neighbours (gan / gun, spay / spray, obit / orbit), but for a
    # letter typed twice (vissa).
    if min(len(x), len(y)) < (4 if _doubled_letter(x, y) else 5) or x[0] != y[0]:
        return False
    # Two keystrokes only where the slip is no word at all and ends as the word does ("mechanize"
    # is a word; "abstractism" is not "abstraction"); one not at either end (printf, dockerd,
    # canvas / canva, lyrics / lyrica: names are made so).
    if distance > (1 if max(len(x), len(y)) < 7 or z_slip > 0.0 or x[-1] != y[-1] else 2):
        return False
    edit = _edit(slip, meant) if distance == 1 else None
    if edit is not None and not _slip_placed(edit, meant, slip, unseen=z_slip == 0.0):
        return False
    return z_slip < _SLIP_ZIPF and z_meant - z_slip >= _SLIP_GAP


_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_KEY_AT = {c: (r, k + 0.5 * r) for r, row in enumerate(_ROWS) for k, c in enumerate(row)}


def _neighbours(a: str, b: str) -> bool:
    """Two keys side by side or diagonal on a QWERTY keyboard."""
    if a not in _KEY_AT or b not in _KEY_AT:
        return False
    (ra, ca), (rb, cb) = _KEY_AT[a], _KEY_AT[b]
    return abs(ra - rb) <= 1 and abs(ca - cb) <= 1.0 and a != b


def _edit(slip: str, meant: str) -> tuple[str, int] | None:
    """The one edit between two words as (kind, where): "drop" (a letter of ``meant`` left out),
    "add" (a letter put in), "swap" (two neighbours swapped), "sub" (one letter for another);
    None for more than one. A letter of a run (pprint, faang) is placed at the run's start."""
    if len(slip) + 1 == len(meant):
        k = next((i for i in range(len(slip)) if slip[i] != meant[i]), len(slip))
        if slip[k:] != meant[k + 1:]:
            return None
        while k > 0 and meant[k - 1] == meant[k]:
            k -= 1
        return "drop", k
    if len(slip) == len(meant) + 1:
        k = next((i for i in range(len(meant)) if slip[i] != meant[i]), len(meant))
        if slip[k + 1:] != meant[k:]:
            return None
        while k > 0 and slip[k - 1] == slip[k]:
            k -= 1
        return "add", k
    diffs = [i for i in range(len(slip)) if slip[i] != meant[i]] if len(slip) == len(meant) else []
    if len(diffs) == 2 and diffs[1] == diffs[0] + 1 and slip[diffs[0]] == meant[diffs[1]] \
            and slip[diffs[1]] == meant[diffs[0]]:
        return "swap", diffs[0]
    return ("sub", diffs[0]) if len(diffs) == 1 else None


def _keyboard_slip(slip: str, meant: str) -> tuple[str, int] | None:
    """``_edit`` when fingers make it: any letter dropped, any two neighbours swapped, a letter
    added that doubles or neighbours a letter beside it, a letter for a neighbouring key's."""
    edit = _edit(slip, meant)
    if edit is None or edit[0] in ("drop", "swap"):
        return edit
    kind, at = edit
    if kind == "add":
        k = next((i for i in range(len(meant)) if slip[i] != meant[i]), len(meant))
        beside = slip[k - 1:k] + slip[k + 1:k + 2]
        return edit if any(c == slip[k] or _neighbours(c, slip[k]) for c in beside) else None
    return ("key", at) if _neighbours(slip[at], meant[at]) else None


def _slip_placed(edit: tuple[str, int], meant: str, slip: str, *, unseen: bool) -> bool:
    """Where a slip may fall: two letters swapped anywhere; nothing else at the first letter,
    where names begin with a letter more (fgets, popen, pprint, rfind), but the first letter of
    a word of six letters or more typed twice in a string no list holds; at the last letter a
    letter typed twice ("wheree"), an "s" (a plural; "england's" without its apostrophe) or a
    silent "e" ("approache"), and for a string no list holds a letter dropped ("kindl") or, in a
    word of six letters or more, a neighbouring key; never another letter more or another
    letter at the end of a shorter or known one, as names end (printf, dockerd, argc, lyrica)."""
    kind, at = edit
    if kind == "swap":
        return True
    if at == 0:     # but the first letter of a long word typed twice ("tthrough", "aanswer")
        return unseen and kind == "add" and slip[0] == slip[1] and len(meant) >= 6
    last = len(meant) - (0 if kind == "add" else 1)
    if at < last:
        return True
    if kind == "add":
        return slip[at - 1] == slip[at] or slip in (meant + "s", meant + "e")
    return unseen and (kind == "drop" or len(meant) >= 6)


def _doubled_letter(x: str, y: str) -> bool:
    """One word is the other with one of its letters typed twice: vissa / visa, adress / address."""
    longer, shorter = (x, y) if len(x) > len(y) else (y, x)
    return len(longer) == len(shorter) + 1 and any(
        longer[k] == longer[k - 1] and longer[:k] + longer[k + 1:] == shorter for k in range(1, len(longer)))


def _ime_slip(ta: Sequence[str], i: int, tb: Sequence[str], j: int) -> bool:
    """One character typed for another of the same sound: one of a group of characters that
    are slips for each other (lexicon kind ``confusable``: 的/得/地, 在/再...); a character that
    makes a dictionary word on one side and stands alone on the other, by the sound an IME
    confuses (以经 / 已经: jieba cuts 以经 into 以 and 经; 自动跟新 / 自动更新, gen / geng); or a
    lone character for another of the very same syllable and tone (怎么练 / 怎么炼). Where a word
    breaks the tone does not count: an IME lists the syllable's characters of every tone
    together (这次 / 这此, 票价 / 票假). Two words (期中 / 期终, 权利 / 权力) are not a slip, nor
    two syllables, nor two tones of lone characters (怎么买 / 怎么卖), nor the lexicon's
    opposite characters anywhere (卖出 / 买出), nor one pronoun for another (他 / 她), nor one that
    makes or breaks an A-not-A question (这个要不要吃 / 这个药不要吃: should I / don't)."""
    x, y = ta[i], tb[j]
    if frozenset((x, y)) in _confusables():
        return True
    if len(_A_NOT_A.findall("".join(ta))) != len(_A_NOT_A.findall("".join(tb))):
        return False
    if x in _PRONOUNS or y in _PRONOUNS or frozenset((x, y)) in _opposites():
        return False
    at_a, at_b = len("".join(ta[:i])), len("".join(tb[:j]))
    span_a, span_b = _word_around("".join(ta), at_a), _word_around("".join(tb), at_b)
    long_a, long_b = span_a[1] - span_a[0] > 1, span_b[1] - span_b[0] > 1
    if long_a and long_b:
        # Two words in one place are two words (期中 / 期终, 期中考试 / 期终|考试). Where the slip
        # joins a neighbour into a word across the other's boundary instead (加|索引 / 加锁|引),
        # one reading is broken, the slip's: the very syllable and tone only.
        (a0, a1), (b0, b1) = span_a, span_b
        crossing = a0 < b0 < a1 < b1 or b0 < a0 < b1 < a1
        return crossing and _one_reading_broken("".join(ta), span_a, "".join(tb), span_b) \
            and bool(_sounds(x, fuzzy=False) & _sounds(y, fuzzy=False))
    # Where a dictionary word breaks on one side, the syllable alone and the IME's fuzzy initials
    # and finals; else the very syllable and tone.
    return bool(_sounds(x, fuzzy=long_a or long_b) & _sounds(y, fuzzy=long_a or long_b))


def _one_reading_broken(text_a: str, span_a: tuple[int, int], text_b: str, span_b: tuple[int, int]) -> bool:
    """Whether what each word leaves outside the other's, read on the other side, is not all
    inside words there: 加|索引 / 加锁|引 leaves 引 alone (a slip), 北京|是不是 / 北京市|不是
    leaves 不是 and 北京 words on both sides (two sentences: is it / the city is not)."""
    def in_words(text: str, positions: range, other: tuple[int, int]) -> bool:
        inside = [k for k in positions if not other[0] <= k < other[1]]
        return all((lambda s: s[1] - s[0] > 1)(_word_around(text, k)) for k in inside)
    return not (in_words(text_b, range(*span_a), span_b) and in_words(text_a, range(*span_b), span_a))


_PRONOUNS = frozenset("他她它你妳您")
_NUMERALS = frozenset("零〇一二两三四五六七八九十百千万亿半几")
_POSITIONS = frozenset("上下前后左右里外内中")
# What an IME's fuzzy pinyin merges (and hurried typing with it): front and back nasals,
# flat and curled initials.
_FUZZY = ((re.compile(r"(?<=[aei])ng$|(?<=i)ng$"), "n"), (re.compile(r"^([zcs])h"), r"\1"))


@functools.lru_cache(maxsize=8192)
def _sounds(char: str, *, fuzzy: bool) -> frozenset[str]:
    """Every reading of a character with its tone ("mai3"); fuzzy: the syllable alone, made
    fuzzy ("mai", "zhi" as "zi")."""
    from pypinyin import Style, pinyin
    out = set()
    for reading in pinyin(char, style=Style.TONE3, heteronym=True, neutral_tone_with_five=True)[0]:
        syllable, tone = reading[:-1], reading[-1:]
        if fuzzy:
            for pattern, repl in _FUZZY:
                syllable = pattern.sub(repl, syllable)
        out.add(syllable if fuzzy else syllable + tone)
    return frozenset(out)


@functools.lru_cache(maxsize=1)
def _opposites() -> frozenset[frozenset[str]]:
    """The lexicon's opposite characters (买 / 卖, 涨 / 跌): never a slip for each other."""
    return frozenset(p for p in word_opposites() if all(len(w) == 1 for w in p))


@functools.lru_cache(maxsize=1)
def _confusables() -> frozenset[frozenset[str]]:
    pairs = set()
    for group in concepts_of_kind("confusable"):
        pairs |= {frozenset((a, b)) for a in group for b in group if a != b}
    return frozenset(pairs)


def _word_around(text: str, at: int) -> tuple[int, int]:
    """The span of the jieba dictionary word that covers position ``at``."""
    start = 0
    for word in _segment(text):
        end = start + len(word)
        if start <= at < end:
            return start, end
        start = end
    return at, at + 1


@functools.lru_cache(maxsize=4096)
def _segment(text: str) -> tuple[str, ...]:
    return tuple(_jieba().lcut(text, HMM=False))


@functools.lru_cache(maxsize=1)
def _jieba():
    import logging

    import jieba
    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba.dt


def _zipf(word: str) -> float:
    return _english().get(word, 0.0)


@functools.lru_cache(maxsize=1)
def _dictionary() -> frozenset[str]:
    """The English words of a spelling dictionary (pyspellchecker's list, 160 k words): rare
    words of their own ("deign", "ficus", "serous", "spay") are in it, common misspellings
    ("recieve", "definately") and strings one slip from a word are not."""
    import gzip
    import json
    from importlib import resources
    with resources.as_file(resources.files("spellchecker") / "resources" / "en.json.gz") as path:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return frozenset(w for w in json.load(fh) if w.isascii() and w.isalpha())


@functools.lru_cache(maxsize=1)
def _english() -> dict[str, float]:
    """English words of zipf frequency >= 1.5 (about 160 k), with their zipf frequency, read
    from wordfreq's list once (its own cached dict of every form would hold 37 MB)."""
    import wordfreq
    out: dict[str, float] = {}
    for bucket, words in enumerate(wordfreq.read_cBpack(wordfreq.available_languages("best")["en"])):
        zipf = 9 - bucket / 100         # bucket i holds the words of frequency 10^(-i/100)
        if zipf < 1.5:
            break
        for w in words:
            if w.isascii() and w.isalpha():
                out[w] = zipf
    return out


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def corrected(text: str) -> str | None:
    """``text`` with each English word that is not a known word replaced by the most frequent
    word one keystroke away (a letter dropped, added, changed, or two swapped) that starts
    alike and is far more frequent; None when nothing was corrected. The encoder reads
    "chnage the email adress" far from what was meant (cosine 0.41): the near-exact path
    searches with this text too."""
    words = _TOKEN.findall(text.lower())
    out, changed = [], False
    for w in words:
        fix = _correction(w) if w.isascii() and w.isalpha() and len(w) >= 4 else None
        out.append(fix or w)
        changed |= fix is not None
    return " ".join(out) if changed else None


@functools.lru_cache(maxsize=16384)
def _correction(word: str) -> str | None:
    own = _zipf(word)
    if own >= _KNOWN_ZIPF:
        return None
    known = _english()
    edits = {word[:i] + word[i + 1:] for i in range(1, len(word))}
    edits |= {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(1, len(word) - 1)}
    edits |= {word[:i] + c + word[i + 1:] for i in range(1, len(word)) for c in _LETTERS}
    edits |= {word[:i] + c + word[i:] for i in range(1, len(word) + 1) for c in _LETTERS}
    found = [(known[e], e) for e in edits if known.get(e, 0.0) >= own + _SLIP_GAP]
    return max(found)[1] if found else None


__all__ = ["NearExact", "corrected", "near_exact", "near_exact_turns", "near_repeat", "tokens"]
