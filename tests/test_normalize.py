"""The normaliser: worked examples and hypothesis properties."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings, strategies as st

from smartcache.context import build_view, convert_numerals, mask_template, normalize_text, parse_messages, zh_to_int


@pytest.mark.parametrize("run, value", [("八千", 8000), ("一万", 10000), ("一万五", 15000), ("三千五", 3500),
                                        ("三千五百", 3500), ("一百零五", 105), ("十二", 12), ("二零二四", 2024),
                                        ("两", 2), ("十", 10)])
def test_zh_to_int(run, value):
    assert zh_to_int(run) == value


@pytest.mark.parametrize("a, b", [
    ("预算八千", "预算8000"), ("三天", "3 天"), ("预算5千块", "预算 5000 元"), ("1.5万元", "15000元"),
    ("５０００元", "5000元"), ("怎么部署？", "怎么部署?"), ("How  DO I deploy", "how do i deploy"),
    ("用户：开启 A 功能", "开启A功能"), ("￥5,000", "5000元"), ("星期三", "周三"), ("300 dollars", "$300"),
    # a thousands separator before a Chinese unit (a word character, so no \b after the group)
    ("预算2,390元", "预算2390元"), ("月薪12,000元", "月薪12000元"), ("1,500,000人", "1500000人"),
    # a reversing prefix written apart
    ("un-follow her", "unfollow her"), ("Dis-connect it", "disconnect it"), ("de-activate", "deactivate"),
    ("un-de-activate", "undeactivate"),
])
def test_equivalent_spellings_normalise_alike(a, b):
    assert normalize_text(a) == normalize_text(b)


@pytest.mark.parametrize("text", ["un-de-activate", "de-de-duplicate", "un-un-follow", "How do I Un-Follow her?"])
def test_joining_prefixes_is_idempotent(text):
    once = normalize_text(text)
    assert normalize_text(once) == once and "-" not in once


def test_the_cased_text_joins_a_prefix_without_making_a_name():
    """Entities are read on the cased text: "Un-Follow" joined as it is would be a camelCase name."""
    assert normalize_text("How do I Un-Follow her?", lower=False) == "How do I Unfollow her?"


@pytest.mark.parametrize("text, kept", [("re-sign the lease", "re-sign"), ("set the locale to de-de", "de-de"),
                                        ("a fun-house mirror", "fun-house"), ("non-profit", "non-profit")])
def test_other_hyphens_stay(text, kept):
    assert kept in normalize_text(text)


@pytest.mark.parametrize("text", ["选1,2,3中的哪个", "1,2345", "第3,4题怎么做"])
def test_a_comma_that_is_no_thousands_separator_stays(text):
    assert "," in normalize_text(text)


@pytest.mark.parametrize("text", ["我想问一下", "一起去吧", "千万别忘了", "万一下雨怎么办", "十分好看"])
def test_numeral_idioms_are_left_alone(text):
    assert convert_numerals(text) == text


# "一点" is "a little" unless the words around it tell a time of day; read as "1点" it was the
# entity time:01:00, so "能再简洁一点吗" added a time to "能帮我精简一下吗".
@pytest.mark.parametrize("text", ["能再简洁一点吗", "一点也不辣", "一点点", "便宜一点", "差一点", "一点儿",
                                  "快一点到", "明天好一点"])
def test_a_little_is_no_clock_time(text):
    assert convert_numerals(text) == text


@pytest.mark.parametrize("text, converted", [("下午一点", "下午1点"), ("明天一点开会", "明天1点开会"),
                                             ("一点半见", "1点半见"), ("一点钟", "1点钟"), ("一点多了", "1点多了"),
                                             ("一点到两点", "1点到2点"), ("凌晨一点", "凌晨1点"),
                                             ("一点以后", "1点以后"), ("一点的飞机", "1点的飞机"), ("约在一点", "约在1点"),
                                             # a decimal is no "a little" either: read as before
                                             ("跑一点五公里", "跑1点5公里")])
def test_one_oclock_is_still_a_time(text, converted):
    assert convert_numerals(text) == converted


# After 哪 / 这 / 那 / 同 / 每 / 某 / 另 / 任 一 picks a thing out and counts nothing: read as "1年"
# it was the entity num:1year, and "茅台是哪一年上市的" was a dropped number against "贵州茅台哪年上市的".
@pytest.mark.parametrize("text", ["茅台是哪一年上市的", "这一天过得真快", "那一次去北京", "同一年出生", "每一年都体检",
                                  "某一天", "另一种方法", "任一个都行"])
def test_one_that_picks_a_thing_out_counts_nothing(text):
    assert convert_numerals(text) == text


@pytest.mark.parametrize("text, converted", [("第一年的利息", "第1年的利息"), ("这两年房价", "这2年房价"),
                                             ("每两年体检一次", "每2年体检1次"), ("一年有多少天", "1年有多少天")])
def test_ordinals_and_other_counts_still_count(text, converted):
    assert convert_numerals(text) == converted


def test_mask_template_hides_volatile_parts_only():
    a = mask_template("You are a bot. Now: 2026-12-01 09:39:12. Request 3f2b8c9d-1a2b-4c3d-9e8f-0a1b2c3d4e5f")
    b = mask_template("You are a bot. Now: 2027-01-15 23:01:00. Request 9a8b7c6d-1a2b-4c3d-9e8f-0a1b2c3d4e5f")
    assert a == b and "You are a bot." in a


text_strategy = st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "Zs")), max_size=60)


@settings(max_examples=300, deadline=None)
@given(text_strategy)
def test_normalisation_is_idempotent(text):
    once = normalize_text(text)
    assert normalize_text(once) == once


@settings(max_examples=300, deadline=None)
@given(text_strategy)
def test_full_width_and_half_width_normalise_alike(text):
    assert normalize_text(unicodedata.normalize("NFKC", text)) == normalize_text(text)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["不", "别", "没", "don't", "not", "never"]), text_strategy)
def test_negation_words_are_never_dropped(neg, text):
    out = normalize_text(f"{text} {neg} 开启")
    assert neg.lower() in out


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=99999))
def test_arabic_numbers_survive(n):
    assert str(n) in normalize_text(f"预算 {n} 以内")


def test_view_drops_small_talk_and_weights_recent_turns():
    view = build_view(parse_messages([
        {"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"},
        {"role": "user", "content": "推荐杭州的酒店"}, {"role": "assistant", "content": "推荐西湖国宾馆。"},
        {"role": "user", "content": "谢谢"}, {"role": "assistant", "content": "不客气"},
        {"role": "user", "content": "早餐怎么样"}]))
    assert [t.role for t in view.history] == ["user", "assistant"]
    assert view.history[0].weight < 1.0 and view.current == "早餐怎么样"
    assert view.first_topic == "推荐杭州的酒店" and view.prior_turns == 6


def test_view_keeps_only_the_last_turns_but_hashes_all():
    msgs = []
    for i in range(12):
        msgs += [{"role": "user", "content": f"问题 {i} 关于部署"}, {"role": "assistant", "content": f"回答 {i}"}]
    long = build_view(parse_messages(msgs + [{"role": "user", "content": "继续"}]))
    shorter = build_view(parse_messages(msgs[2:] + [{"role": "user", "content": "继续"}]))
    assert len(long.history) == 5
    assert long.history == shorter.history and long.history_hash != shorter.history_hash
