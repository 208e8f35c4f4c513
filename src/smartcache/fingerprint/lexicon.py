r"""Language knowledge as data: the lexicon files ``data/lexicon/{zh,en}.toml`` and their loader.

Each concept is defined once, in its language's file, and the rule tables are derived
from it: ``tags._ACTIONS``, ``tags._GENERIC`` and ``tags.ANTONYMS`` (regex parts), ``tokens._SYNONYMS``,
``tokens._FORM_GROUPS``, ``swaps._OPPOSITES``, ``tokens._FILLER``,
``tokens._QUESTION_WORDS`` and ``appended._CONSTRAINT``. The schema is written at the top of each file.

    >>> "开启" in next(c for c in load_lexicon("zh").concepts if c.name == "enable").members("action")
    True
    >>> word_regex("deploy*", stem=True), word_regex("turn on", stem=False), word_regex("部署", stem=True)
    ('\\bdeploy', '\\bturn\\ on\\b', '部署')
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from importlib import resources

from smartcache.errors import ConfigError

LANGUAGES = ("zh", "en")      # the order the tables are built in
KINDS = frozenset({"synonyms", "action", "antonym", "opposites", "filler", "question", "common",
                   "constraint", "courtesy", "courtesy_inner", "courtesy_lead", "confusable", "asking",
                   "question_frame", "generic_action", "role"})
USES = ("synonyms", "action", "antonym")   # the uses a member can be left out of (``not_in``)
_KEYS = frozenset({"kind", "words", "patterns", "opposite", "pairs", "synonyms", "form", "not_in", "examples", "since",
                   "stands_for"})

Pair = tuple[str, str]


@dataclass(frozen=True)
class Concept:
    """One concept of one language, as its file defines it."""

    name: str
    kind: str
    words: tuple[str, ...]            # "stem*": any word starting so, in action classes only
    patterns: tuple[str, ...] = ()    # regexes, for what a word list cannot say; action / antonym / constraint / asking
    opposite: str | None = None       # the concept of the same file that asks the opposite
    pairs: tuple[Pair, ...] = ()      # single words whose swap for each other asks the opposite
    synonyms: bool = False            # the words also stand for each other in the diff
    form: bool = False                # ... and that group is a question's form or a courtesy
    not_in: tuple[tuple[str, frozenset[str]], ...] = ()   # (use, members left out of that use)
    same: tuple[Pair, ...] = ()       # examples the concept's rules must not tell apart
    different: tuple[Pair, ...] = ()  # examples they must tell apart
    since: int = 1                    # the lexicon version that added its opposite pair (the pairs' order)
    stands_for: tuple[str, ...] = ()  # generic_action: the action classes it may be asked as

    def members(self, use: str) -> tuple[str, ...]:
        """The words (and, for the regex uses, patterns) of one use, in file order."""
        left_out = dict(self.not_in).get(use, frozenset())
        items = self.words + (self.patterns if use in ("action", "antonym", "constraint", "asking", "generic_action")
                              else ())
        return tuple(m for m in items if m not in left_out)


@dataclass(frozen=True)
class Lexicon:
    lang: str
    version: int
    concepts: tuple[Concept, ...]

    def antonym_names(self) -> frozenset[str]:
        """Concepts that are one side of an opposite pair (naming one or named by one)."""
        return frozenset(n for c in self.concepts if c.opposite for n in (c.name, c.opposite))


def word_regex(word: str, *, stem: bool) -> str:
    """A member as a regex: CJK as written, ASCII at word boundaries; "deploy*" is a prefix
    where ``stem`` (action classes) and the plain word elsewhere."""
    prefix = word.endswith("*")
    word = word.rstrip("*")
    if not word.isascii():
        return re.escape(word)
    return rf"\b{re.escape(word)}" + ("" if prefix and stem else r"\b")


def _fail(source: str, msg: str) -> ConfigError:
    return ConfigError(f"lexicon {source}: {msg}")


def _strings(value: object, where: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(source, f"{where} must be a list of non-empty strings")
    return tuple(value)


def _pairs(value: object, where: str, source: str) -> tuple[Pair, ...]:
    if not isinstance(value, list) or not all(isinstance(p, list) and len(p) == 2 for p in value):
        raise _fail(source, f"{where} must be a list of [a, b] pairs")
    return tuple((a, b) for a, b in (_strings(p, where, source) for p in value))


def _concept(name: str, raw: object, source: str) -> Concept:
    where = f"concept.{name}"
    if not isinstance(raw, dict):
        raise _fail(source, f"{where} must be a table")
    unknown = set(raw) - _KEYS
    if unknown:
        raise _fail(source, f"{where}: unknown keys {sorted(unknown)}")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise _fail(source, f"{where}.kind must be one of {sorted(KINDS)}, not {kind!r}")
    words = _strings(raw.get("words", []), f"{where}.words", source)
    patterns = _strings(raw.get("patterns", []), f"{where}.patterns", source)
    for p in patterns:
        try:
            re.compile(p)
        except re.error as exc:
            raise _fail(source, f"{where}.patterns: {p!r} is not a regex ({exc})") from None
    pairs = _pairs(raw.get("pairs", []), f"{where}.pairs", source)
    if not (words or patterns or pairs):
        raise _fail(source, f"{where} has no words, patterns or pairs")
    if kind == "opposites" and not pairs:
        raise _fail(source, f"{where}: an opposites concept needs pairs")
    flags = {k: raw.get(k, False) for k in ("synonyms", "form")}
    if not all(isinstance(v, bool) for v in flags.values()):
        raise _fail(source, f"{where}: synonyms and form are true or false")
    synonyms = kind == "synonyms" or flags["synonyms"]
    if flags["form"] and not synonyms:
        raise _fail(source, f"{where}: form = true needs a synonym group (kind synonyms or synonyms = true)")
    not_in = raw.get("not_in", {})
    if not isinstance(not_in, dict) or not set(not_in) <= set(USES):
        raise _fail(source, f"{where}.not_in takes the uses {list(USES)}")
    left_out = {use: frozenset(_strings(v, f"{where}.not_in.{use}", source)) for use, v in not_in.items()}
    for use, members in left_out.items():
        if not members <= set(words) | set(patterns):
            strangers = sorted(members - set(words) - set(patterns))
            raise _fail(source, f"{where}.not_in.{use}: {strangers} are not its members")
    examples = raw.get("examples", {})
    if not isinstance(examples, dict) or not set(examples) <= {"same", "different"}:
        raise _fail(source, f"{where}.examples takes same and different")
    same = _pairs(examples.get("same", []), f"{where}.examples.same", source)
    different = _pairs(examples.get("different", []), f"{where}.examples.different", source)
    if not (same or different):
        raise _fail(source, f"{where} has no examples: every concept carries a same or different pair")
    opposite = raw.get("opposite")
    if opposite is not None and (not isinstance(opposite, str) or opposite == name):
        raise _fail(source, f"{where}.opposite must name another concept")
    since = raw.get("since", 1)
    if not isinstance(since, int) or isinstance(since, bool) or since < 1 or "since" in raw and opposite is None:
        raise _fail(source, f"{where}.since is the version that added its opposite pair (a positive integer, "
                            f"with opposite)")
    stands_for = _strings(raw.get("stands_for", []), f"{where}.stands_for", source)
    if kind == "generic_action" and not stands_for or kind != "generic_action" and "stands_for" in raw:
        raise _fail(source, f"{where}: a generic_action concept, and only one, names the action classes it "
                            f"stands_for")
    return Concept(name, kind, words, patterns, opposite, pairs, synonyms=synonyms,
                   form=flags["form"], not_in=tuple(sorted(left_out.items())), same=same, different=different,
                   since=since, stands_for=stands_for)


def parse_lexicon(text: str, lang: str, source: str = "<text>") -> Lexicon:
    """A lexicon from the text of its file; ConfigError says what is wrong and where."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(source, f"not valid TOML ({exc})") from None
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _fail(source, "needs a top-level 'version = N' (a positive integer)")
    if set(data) - {"version", "concept"} or not isinstance(data.get("concept"), dict):
        raise _fail(source, "holds 'version' and [concept.NAME] tables, nothing else")
    concepts = tuple(_concept(name, raw, source) for name, raw in data["concept"].items())
    names = {c.name for c in concepts}
    actions = {c.name for c in concepts if c.kind == "action"}
    for c in concepts:
        if c.opposite is not None and c.opposite not in names:
            raise _fail(source, f"concept.{c.name}.opposite names no concept: {c.opposite!r}")
        if not set(c.stands_for) <= actions:
            raise _fail(source, f"concept.{c.name}.stands_for names no action class: "
                                f"{sorted(set(c.stands_for) - actions)}")
    return Lexicon(lang, version, concepts)


@functools.lru_cache(maxsize=None)
def load_lexicon(lang: str) -> Lexicon:
    """The packaged lexicon of one language ("zh", "en"), read once."""
    if lang not in LANGUAGES:
        raise ConfigError(f"no lexicon for language {lang!r}; have {list(LANGUAGES)}")
    path = f"data/lexicon/{lang}.toml"
    return parse_lexicon(resources.files("smartcache").joinpath(path).read_text(encoding="utf-8"), lang, path)


def lexicons() -> tuple[Lexicon, ...]:
    return tuple(load_lexicon(lang) for lang in LANGUAGES)


# The tables the rules use, derived from both files (Chinese first, file order within).

def synonym_groups() -> list[tuple[tuple[str, ...], bool]]:
    """(members, is a question form) per synonym group; stems are the plain word here."""
    return [(tuple(m.rstrip("*") for m in c.members("synonyms")), c.form)
            for lex in lexicons() for c in lex.concepts if c.synonyms]


def action_classes() -> dict[str, list[str]]:
    """Action class name -> regex parts, both languages' members joined under one name."""
    out: dict[str, list[str]] = {}
    for lex in lexicons():
        for c in lex.concepts:
            if c.kind == "action":
                out.setdefault(c.name, []).extend(_regex_parts(c, "action"))
    return out


def generic_actions() -> dict[str, tuple[list[str], frozenset[str]]]:
    """Generic verb name -> (regex parts, the action classes it may stand for), both languages'
    members joined under one name ("create": create / 创建 / 新建)."""
    out: dict[str, tuple[list[str], frozenset[str]]] = {}
    for lex in lexicons():
        for c in lex.concepts:
            if c.kind == "generic_action":
                parts, classes = out.get(c.name, ([], frozenset()))
                out[c.name] = (parts + _regex_parts(c, "generic_action"), classes | frozenset(c.stands_for))
    return out


def roles() -> dict[str, str]:
    """Word -> the role it names ("manager" -> "role_boss"), both languages: one person, however
    worded (``decide.swaps.person_swapped``)."""
    return {w.lower(): c.name for lex in lexicons() for c in lex.concepts if c.kind == "role" for w in c.words}


def antonym_pairs() -> list[tuple[list[str], list[str]]]:
    """(regex parts of one side, of the other) per opposite pair, by the version that added it
    (``since``), then in the order pairs first appear: ``action_sides`` is positional and stored
    with entries, so a pair added later goes after every older one, whichever file holds it."""
    out: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    since: dict[tuple[str, str], int] = {}
    for lex in lexicons():
        by_name = {c.name: c for c in lex.concepts}
        for c in lex.concepts:
            if c.opposite:
                one, other = _regex_parts(c, "antonym"), _regex_parts(by_name[c.opposite], "antonym")
                key = (c.name, c.opposite)
                if key[::-1] in out:         # the pair was named from its other side
                    key, one, other = key[::-1], other, one
                first, second = out.setdefault(key, ([], []))
                first.extend(one)
                second.extend(other)
                since[key] = max(since.get(key, 1), c.since)
    return [out[key] for key in sorted(out, key=lambda k: since[k])]     # a stable sort: file order within


def word_opposites() -> set[frozenset[str]]:
    return {frozenset(p) for lex in lexicons() for c in lex.concepts for p in c.pairs}


def words_of_kind(kind: str) -> frozenset[str]:
    """Every word of the concepts of one kind ("filler", "question"), both languages."""
    return frozenset(w for lex in lexicons() for c in lex.concepts if c.kind == kind for w in c.words)


def concepts_of_kind(kind: str) -> list[tuple[str, ...]]:
    """The words of each concept of one kind, concept by concept, both languages."""
    return [c.words for lex in lexicons() for c in lex.concepts if c.kind == kind]


def constraint_openers() -> list[str]:
    """Regex parts of the clause openers that state a constraint ("i live in", "我是"), both
    languages: a clause only one request has that starts so asks something else
    (``decide.appended``)."""
    return [p for lex in lexicons() for c in lex.concepts if c.kind == "constraint"
            for p in _regex_parts(c, "constraint")]


def asking_parts() -> list[str]:
    """Regex parts of what makes a clause a question by itself (什么, 如何; not 没什么, 什么都),
    both languages (``decide.near_exact``: a 吗 closing such a clause adds nothing)."""
    return [p for lex in lexicons() for c in lex.concepts if c.kind == "asking" for p in _regex_parts(c, "asking")]


def _regex_parts(concept: Concept, use: str) -> list[str]:
    stem = use in ("action", "generic_action")
    return [m if m in concept.patterns else word_regex(m, stem=stem) for m in concept.members(use)]
