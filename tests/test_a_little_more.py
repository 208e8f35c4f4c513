""""再短一点" asks for the last answer again, a little more so: a change to the request
(``ChangeFlag.REPLACEMENT``), as "make it shorter" is. It was read as one only by accident,
while "一点" was read as one o'clock (the entity time:01:00 was the change). Not a
comparison ("哪个更好一点"), "a little" elsewhere in a new request, nor "再见"."""

from __future__ import annotations

import pytest

from smartcache.context import normalize_text
from smartcache.fingerprint import ChangeFlag
from smartcache.fingerprint.tags import change_flags


@pytest.mark.parametrize("text", ["再短一点", "能再简洁一点吗？", "再详细些吧", "再写长点儿", "再便宜一点，预算有限",
                                  "再正式一些。"])
def test_a_little_more_so_changes_the_request(text):
    assert ChangeFlag.REPLACEMENT in change_flags(normalize_text(text))


@pytest.mark.parametrize("text", ["一点也不辣吗", "再见", "哪个更好一点", "我想再了解一点历史知识的书", "能不能再讲讲",
                                  "简洁一点的写法有哪些", "我想再看看这些", "怎么让网速再快一点？",
                                  "如何让孩子再自信一些"])
def test_other_uses_are_no_change(text):
    assert ChangeFlag.REPLACEMENT not in change_flags(normalize_text(text))
