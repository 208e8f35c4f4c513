"""A generic verb against an action class (stop 48): "create" names no class of its own, so a
request to create a database and one to back it up read as one asking an action and one not,
and the verifier served one for the other. Action sets are now compared by more than equality:
the verb may stand for a class that makes something too (set up, write, plan, an invoice), never
for one that works on what exists (back up, migrate, debug, cancel, read).
"""

from __future__ import annotations

import pytest

from smartcache.context.normalize import normalize_text
from smartcache.decide.decision import Zone
from smartcache.fingerprint.tags import actions_conflict, generic_verbs, task_actions


def conflict(a: str, b: str) -> bool:
    a, b = normalize_text(a), normalize_text(b)
    return actions_conflict(a, task_actions(a), b, task_actions(b))


# One request: the verb is asked as the other side's class (a review's pairs, lost hits of the
# create action class tried at stop 46, and fresh ones).
AS_A_CLASS = [
    ("create a free email account", "set up a free email account"),
    ("create a virtual environment", "set up a virtual environment"),
    ("create a cover letter", "write a cover letter"),
    ("create a travel itinerary for Rome", "plan a travel itinerary for Rome"),
    ("create an invoice for a client", "make an invoice for a client"),
    ("how to create a csv file in python", "how to save a csv file in python"),      # a review's
    ("create a title for my blog post", "give my blog post a title"),
    ("新建一个简历模板", "帮我写一个简历模板"),
    ("帮我创建一个五天的行程", "帮我规划一个五天的行程"),
]
# Two requests: the other side works on what exists.
ANOTHER_ACTION = [
    ("how do i create a new table in mysql", "how do i back up a table in mysql"),
    ("how do i create a repository on github", "how do i migrate a repository on github"),
    ("how do i create a cron job", "how do i debug a cron job"),
    ("how do i create a zoom meeting", "how do i cancel a zoom meeting"),
    ("how to make a new excel file in python", "how to read an excel file in python"),
    ("怎么新建一个数据库", "怎么备份数据库"),
    ("怎么创建一个共享文件夹", "怎么迁移共享文件夹"),
    ("怎么创建一个会员账户", "怎么取消会员账户"),
    # what works on existing text, and a booking (a review's): never "create"
    ("create a cover letter for a nurse", "rewrite a cover letter for a nurse"),
    ("create a product description for my shop", "shorten a product description for my shop"),
    ("新建一个word文档", "翻译一个word文档"),
    ("create a google calendar event", "book a google calendar event"),
]
# Unchanged: neither side names a class, or both do.
AS_BEFORE = [
    ("how do i create a new database", "how do i make a new database"),       # no class on either side
    ("create a backup of my phone", "back up my phone"),                        # both read as backup
    ("how do i create a pivot table", "how do i delete a pivot table"),         # no class: the rest decide
]


@pytest.mark.parametrize("a,b", AS_A_CLASS)
def test_a_generic_verb_stands_for_a_class_that_makes_something(a, b):
    assert not conflict(a, b) and not conflict(b, a)
    assert generic_verbs(normalize_text(a)) == ("create",)


@pytest.mark.parametrize("a,b", ANOTHER_ACTION)
def test_a_generic_verb_is_not_a_class_that_works_on_what_exists(a, b):
    assert conflict(a, b) and conflict(b, a)


@pytest.mark.parametrize("a,b", AS_BEFORE)
def test_without_a_class_on_one_side_only_nothing_changes(a, b):
    assert not conflict(a, b)


@pytest.mark.parametrize("text", [
    "update create-react-app to the latest version",     # a name joined by a hyphen
    "why does create_engine fail in sqlalchemy",
    "最新建成的地铁线路有哪些",                             # inside other words
    "创新建设示范区有什么政策",
    "怎么查看文件的创建时间",                               # the noun
    "新建文件夹怎么改名",                                   # the folder's default name
])
def test_the_verb_is_no_name_word_part_or_noun(text):
    assert generic_verbs(normalize_text(text)) == ()


def test_the_verb_is_read_in_the_instruction_only():
    # pasted material after the instruction is worked on, not asked for
    assert generic_verbs(normalize_text("translate this: create a new account first")) == ()


@pytest.mark.integration
@pytest.mark.parametrize("cached,probe", [ANOTHER_ACTION[0], ANOTHER_ACTION[5], ANOTHER_ACTION[3]])
def test_another_action_on_the_same_object_is_no_hit(one_pair, cached, probe):
    for a, b in ((cached, probe), (probe, cached)):
        found = one_pair(a, b)
        assert found.zone is not Zone.HIT
        assert found.has_reason("task_action"), found.reasons


@pytest.mark.parametrize("text, rewrite", [
    ("make this email sound more formal", True),
    ("make it sound less robotic: thanks for the update", True),       # "sound X:" before material
    ("how to fix my car exhaust to make it sound louder", False),      # audio (a review's)
    ("set up my mic to make it sound warmer", False),
    ("does this make it sound rude?", False),
])
def test_make_it_sound_is_a_rewrite_only_of_writing(text, rewrite):
    assert ("rewrite" in task_actions(normalize_text(text))) is rewrite
