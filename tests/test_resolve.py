"""Reference resolution in both languages: what must be rewritten, and what must be left alone."""

from __future__ import annotations

import pytest

from smartcache.context import normalize_text
from smartcache.fingerprint import resolve_references


def resolve(text: str, *context: str) -> str:
    return resolve_references(normalize_text(text, lower=False), [normalize_text(c, lower=False) for c in context])


@pytest.mark.parametrize("text, context, expected", [
    ("它的作者是谁", ("推荐一本科幻小说", "推荐《三体》，刘慈欣的代表作。"), "三体的作者是谁"),
    ("那本书讲了什么", ("有什么好看的历史书", "可以看看《人类简史》"), "人类简史讲了什么"),
    ("那家酒店的早餐怎么样", ("推荐一家西湖边的酒店", "推荐西湖国宾馆,早餐丰富."), "西湖国宾馆的早餐怎么样"),
    ("who wrote it?", ("Recommend a sci-fi novel", "I would try the novel Dune."), "who wrote Dune?"),
    ("can I read PDFs on it?", ("Which e-reader should I buy?", "The Kindle Scribe is a great choice."),
     "can I read PDFs on Kindle Scribe?"),
    ("what about his brother?", ("Who is Elon Musk?", "Elon Musk is the CEO of Tesla and SpaceX."),
     "what about Elon Musk's brother?"),
    ("为什么", ("鲸鱼不是鱼", "对，鲸鱼是哺乳动物。"), "为什么 对,鲸鱼是哺乳动物"),
    ("why?", ("Is Pluto a planet?", "No, Pluto was reclassified as a dwarf planet in 2006."),
     "why No, Pluto was reclassified as a dwarf planet in 2006"),
], ids=["zh-it", "zh-that-book", "zh-that-hotel", "en-object-it", "en-on-it", "en-his", "zh-bare-why", "en-bare-why"])
def test_references_resolve_to_the_one_thing_the_context_names(text, context, expected):
    assert resolve(text, *context) == expected


@pytest.mark.parametrize("text, context", [
    ("how long does it take to cook?", ("I want to make risotto", "Risotto is a creamy Italian rice dish.")),
    ("is it safe to swim there in winter?", ("Compare Lisbon and Porto", "Lisbon is sunnier; Porto is rainier.")),
    ("那家酒店的早餐怎么样", ("推荐两家酒店", "西湖国宾馆和香格里拉饭店都不错。")),      # two candidates: unsure
    ("它的作者是谁", ()),                                                         # nothing to point at
    ("why do cats purr?", ("Tell me about cats", "Cats are small carnivores.")),     # not a bare why
    ("who wrote it?", ("Recommend a book", "Try Dune or Foundation.")),            # two titles
], ids=["dummy-it", "two-places", "zh-two-hotels", "no-context", "full-why", "two-titles"])
def test_references_stay_as_written_when_the_antecedent_is_not_certain(text, context):
    assert resolve(text, *context) == normalize_text(text, lower=False)
