r"""Look-alike letters folded to the letter they imitate, so the rules read what a person reads.

A Cyrillic "а" drawn like a Latin "a" turns "password" into a word no rule or entity
pattern knows, while a reader (and an engine) still reads "password". An attacker uses
that to hide an instruction from the cache ("visit ехаmрlе.tеst", three letters Cyrillic)
or to make a request look new. The table is data, ``data/confusables.toml``, each row named
and its examples tested (tests/test_confusables.py):

- a Cyrillic or Greek look-alike becomes its Latin letter only inside a token that also holds
  Latin letters: a token that mixes scripts is a disguise, a token of one script is a word
  of that script and is left as written;
- a CJK radical drawn like an ideograph (U+2E80 block: "⻔" for "门") becomes the ideograph
  everywhere: radicals are never text. (NFKC already folds the Kangxi radicals.)

    >>> fold_confusables("reset my p\u0430ssword")          # Cyrillic а inside a Latin word
    'reset my password'
    >>> fold_confusables("visit \u0435x\u0430mpl\u0435.t\u0435st")
    'visit example.test'
    >>> fold_confusables("\u0447\u0430\u0439是什么")         # a Russian word beside Chinese: its own script
    'чай是什么'
    >>> fold_confusables("spearman \u03c1 = 0.8")            # a Greek letter on its own is a symbol
    'spearman ρ = 0.8'
    >>> fold_confusables("怎么开\u2ed4"), fold_confusables("不要开门")
    ('怎么开门', '不要开门')

A whole word written only in look-alikes ("ѕее", all Cyrillic) is not folded: it cannot be
told from a word of that script, and stays a foreign token, which the rules count as a
difference rather than read as the Latin word.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from importlib import resources

from smartcache.errors import ConfigError

_LETTERS = r"[^\W\d_\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+"  # not CJK, kana, hangul
_TOKEN = re.compile(_LETTERS)
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_CYRILLIC_GREEK = re.compile(r"[\u0370-\u03ff\u0400-\u052f]")
_CANDIDATE = re.compile(r"[\u0370-\u03ff\u0400-\u052f\u2e80-\u2eff]")


@dataclass(frozen=True)
class Confusables:
    """The table of ``data/confusables.toml``: look-alike -> the character it imitates."""

    version: int
    latin: dict[str, str]
    cjk: dict[str, str]
    same: tuple[tuple[str, str], ...]
    different: tuple[tuple[str, str], ...]


def _pairs(value: object, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list) or not all(isinstance(p, list) and len(p) == 2
                                              and all(isinstance(s, str) for s in p) for p in value):
        raise ConfigError(f"confusables.toml: {where} must be a list of [text, text] pairs")
    return tuple((a, b) for a, b in value)


def _table(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) and len(k) == 1
                                              and len(v) == 1 and k != v for k, v in value.items()):
        raise ConfigError(f"confusables.toml: [{where}] must map one character to another")
    return dict(value)


@functools.cache
def load_confusables() -> Confusables:
    """Read the packaged table (once); ConfigError if it is malformed."""
    text = resources.files("smartcache").joinpath("data/confusables.toml").read_text("utf-8")
    data = tomllib.loads(text)
    latin, cjk = _table(data.get("latin"), "latin"), _table(data.get("cjk"), "cjk")
    if any(not _CYRILLIC_GREEK.fullmatch(k) or not _LATIN.fullmatch(v) for k, v in latin.items()):
        raise ConfigError("confusables.toml: [latin] maps Cyrillic or Greek letters to Latin ones")
    if any(not "\u2e80" <= k <= "\u2eff" for k in cjk):
        raise ConfigError("confusables.toml: [cjk] maps CJK radicals (U+2E80 block)")
    examples = data.get("examples", {})
    return Confusables(int(data.get("version", 1)), latin, cjk,
                       _pairs(examples.get("same", []), "examples.same"),
                       _pairs(examples.get("different", []), "examples.different"))


@functools.cache
def _translations() -> tuple[dict[int, str], dict[int, str]]:
    table = load_confusables()
    return str.maketrans(table.latin), str.maketrans(table.cjk)


def _fold_token(match: re.Match[str], latin: dict[int, str]) -> str:
    token = match.group()
    if _LATIN.search(token) and _CYRILLIC_GREEK.search(token):
        return token.translate(latin)
    return token


def fold_confusables(text: str) -> str:
    """``text`` with look-alikes folded (see the module's doc); unchanged when it has none."""
    if text.isascii() or not _CANDIDATE.search(text):
        return text
    latin, cjk = _translations()
    text = text.translate(cjk)
    return _TOKEN.sub(lambda m: _fold_token(m, latin), text)
