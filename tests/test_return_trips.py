"""A trip from X may end with 回 / 往 / 返 (stop 47): "从香港回深圳" is the other way round from
"从深圳去香港", as "从上海到北京" is from "从北京到上海". Answering or reviewing "from" a point of
view (从…回答, 从头回顾) is no trip.
"""

from __future__ import annotations

import pytest

from smartcache.context.normalize import normalize_text
from smartcache.decide.swaps import _ORDER_MATTERS

RETURN_TRIPS = ["从香港过关回深圳", "从上海开往成都", "从公司回家要多久", "从机场前往市区", "from Rome back to Paris"]
# Not a trip: 从 as "ever" / "engage in" / "obey", 往往 (often), a function's 返回, 一回事, 回滚, 回调 (a review's).
NO_TRIP = ["从这个角度回答一下", "从头回顾一下这本书", "从客户的角度回复这封邮件", "从零开始学吉他",
           "从零学Python和Java往往需要多久", "从Git和SVN迁移代码后怎么回滚", "我从来没回过北京和上海",
           "从本质上说，TCP和UDP是一回事吗", "从事Python和Java开发，回国好找工作吗", "如何从API返回JSON和XML",
           "服从安排，周一和周二回公司", "从函数返回多个值，Python和Go哪个方便"]


@pytest.mark.parametrize("text", RETURN_TRIPS)
def test_a_trip_that_ends_with_hui_wang_or_fan_is_one_whose_order_matters(text):
    assert _ORDER_MATTERS.search(normalize_text(text))


@pytest.mark.parametrize("text", NO_TRIP)
def test_answering_or_reviewing_from_a_point_of_view_is_no_trip(text):
    assert not _ORDER_MATTERS.search(normalize_text(text))


@pytest.fixture(scope="module")
def lookup(one_pair):
    return one_pair


@pytest.mark.integration
@pytest.mark.parametrize("cached,probe", [
    ("从深圳福田口岸过关去香港要注意什么？", "从香港过关回深圳福田口岸要注意什么？"),
    ("从北京去上海怎么走", "从上海回北京怎么走"),
    ("从广州回深圳的大巴几点发车", "从深圳回广州的大巴几点发车"),
])
def test_the_return_trip_is_refused_as_the_other_direction(lookup, cached, probe):
    found = lookup(cached, probe)
    assert found.zone.value == "miss"
    assert any(r.code.value == "direction_reversed" for r in found.reasons), found.reasons


@pytest.mark.integration
def test_the_same_return_trip_reworded_is_not_a_reversal(lookup):
    found = lookup("从北京回上海的高铁几点", "从北京回上海的高铁是几点")
    assert not any(r.code.value == "direction_reversed" for r in found.reasons), found.reasons
