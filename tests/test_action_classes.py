"""Two requests about one object that ask for different actions are told apart (``task_action``):
creating a thing is not backing it up. Examples written for the class, not taken from a case set."""

from __future__ import annotations

import pytest

from conftest import A, U
from smartcache.decide import Zone

HISTORY = [U("I just installed MySQL 8 on Debian."), A("Nice, what would you like to do next?")]

DIFFERENT_ACTIONS = [
    ("How do I create a new database in MySQL?", "How do I back up a MySQL database?"),
    ("How do I create a new user in MySQL?", "How do I back up the users in MySQL?"),
    ("怎么创建一个数据库", "怎么备份一个数据库"),
    ("PostgreSQL怎么新建数据库", "PostgreSQL怎么备份数据库"),
]


@pytest.mark.parametrize("cached, asked", DIFFERENT_ACTIONS)
def test_creating_and_backing_up_one_object_are_two_actions(cache, cached, asked):
    stored = cache.store([*HISTORY, U(cached)], "the answer", session="s")
    cache.promote(stored.cache_id)
    found = cache.lookup([*HISTORY, U(asked)], session="s")
    assert found.zone is Zone.MISS
    assert any(r.code.value == "task_action" for r in found.reasons), found.reasons
