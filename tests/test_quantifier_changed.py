"""One item, or all of them (issue 27): "download the invoice for one order" served "download
invoices for all my orders in one go". A request about one thing and a request about every one
of the same things are different requests; the detector needs both sides to say it ("one",
"a single", 单个, 一条 against "all", "every", 所有, 全部, 批量) about the same noun."""

from __future__ import annotations

import pytest

from conftest import U
from smartcache.decide import Zone
from smartcache.decide.swaps import quantifier_changed
from smartcache.context import normalize_text

DIFFERENT = [
    ("How do I delete one photo from an album?", "How do I delete all photos from an album?"),
    ("How can I cancel a single order?", "How can I cancel all of my orders?"),
    ("Export one sheet of the workbook to PDF", "Export every sheet of the workbook to PDF"),
    ("How do I mute one participant in a Zoom call?", "How do I mute all participants in a Zoom call?"),
    ("怎么删除一条聊天记录", "怎么删除所有聊天记录"),
    ("如何取消单个订单", "如何批量取消订单"),
    ("怎么给一个文件夹设置密码", "怎么给全部文件夹设置密码"),
    # found by a review: "one of" my orders is one of them
    ("How do I cancel one of my orders?", "How do I cancel all of my orders?"),
]
SAME = [
    ("How do I download all my photos from iCloud?", "How can I download every photo from iCloud?"),
    ("How do I merge two PDFs into one file?", "How can I combine two PDFs into a single file?"),
    ("Is Lisbon one of the best cities for remote work?", "Is Lisbon among the best cities for remote work?"),
    ("What is the single best way to learn Python?", "What is the best way to learn Python?"),
    ("Which all-in-one printer is best for a small office?", "Which all in one printer should a small office buy?"),
    ("Does this charger work at all with one phone?", "Does this charger work with one phone?"),
    ("How do I select all text in one cell?", "How do I select every word in a single cell?"),
    ("所有文件都要备份吗", "全部文件都需要备份吗"),
    ("怎么把多个表格合并成一个表格", "如何把几个表格合并成一个表格"),
    ("Can I pay for all orders in one go?", "Can I pay for all my orders at once?"),
    # found by a review: a word's first half, "every single", "all individual", merged into one,
    # every one, any one, merged into one in Chinese
    ("How much is a one-day pass?", "How much is an all-day pass?"),
    ("How do I cancel every single order?", "How do I cancel all my orders?"),
    ("How do I download all individual files?", "How do I download all files?"),
    ("How do I merge PDFs into a single PDF?", "How do I merge all my PDFs into one?"),
    ("How do I combine sheets into one sheet?", "How do I combine several sheets?"),
    ("每一个订单都能开发票吗", "所有订单都能开发票吗"),
    ("任何一个订单都能退吗", "所有订单都能退吗"),
    ("怎么把表格合并成一个表格", "怎么合并多个表格"),
]


@pytest.mark.parametrize("a, b", DIFFERENT)
def test_one_item_against_all_of_them_is_found_both_ways(a, b):
    a, b = normalize_text(a), normalize_text(b)
    assert quantifier_changed(a, b) is not None
    assert quantifier_changed(b, a) is not None


@pytest.mark.parametrize("a, b", SAME)
def test_the_same_quantity_said_twice_or_an_idiom_is_not_a_change(a, b):
    a, b = normalize_text(a), normalize_text(b)
    assert quantifier_changed(a, b) is None
    assert quantifier_changed(b, a) is None


def test_the_cache_refuses_one_order_for_all_orders(make_cache):
    cache = make_cache()
    stored = cache.store([U("How do I download the invoice for one order?")],
                         "Open Your Orders, pick the order and choose Invoice under it.", session="s")
    cache.promote(stored.cache_id)
    found = cache.lookup([U("How do I download invoices for all my orders from this year in one go?")], session="s")
    assert found.zone is not Zone.HIT
    assert any(r.code.value == "quantifier_changed" for r in found.reasons)
