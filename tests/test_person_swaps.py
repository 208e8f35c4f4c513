"""One person for another (stop 48): a request about or for someone else by role ("a thank-you
email to my client" / "… to my boss", 给客户 / 给经理, 女朋友 / 男朋友), the rest word for word,
is another request. The words of one role are one person (boss / manager, 老板 / 领导).
"""

from __future__ import annotations

import pytest

from smartcache.context.normalize import normalize_text
from smartcache.decide.decision import Zone
from smartcache.decide.swaps import person_swapped, substituted_spans


def swapped(a: str, b: str):
    a, b = normalize_text(a), normalize_text(b)
    return person_swapped(a, b, substituted_spans(a, b))


ANOTHER_PERSON = [
    ("write a farewell message for my colleague", "write a farewell message for my teacher"),
    ("how do i apologise to my girlfriend", "how do i apologise to my mom"),
    ("what to say to a patient after bad news", "what to say to a friend after bad news"),
    ("my landlord keeps entering without notice", "my roommate keeps entering without notice"),
    ("给经理写一封请假邮件", "给客户写一封请假邮件"),
    ("老公过生日送什么礼物", "老婆过生日送什么礼物"),
    ("怎么跟学生解释这个规定", "怎么跟家长解释这个规定"),
    # a review's: ex-, step- and in-law are other people, and grandparents and siblings roles
    ("my girlfriend keeps texting me", "my ex-girlfriend keeps texting me"),
    ("how to get along with my mom", "how to get along with my stepmom"),
    ("my mom hates my cooking", "my mother-in-law hates my cooking"),
    ("birthday message for my grandpa", "birthday message for my grandma"),
    ("送姐姐什么礼物好", "送哥哥什么礼物好"),
]
ONE_PERSON = [
    ("write an email to my boss asking for leave", "write an email to my manager asking for leave"),
    ("how do i deal with a difficult coworker", "how do i deal with a difficult colleague"),
    ("给领导写一封请假邮件", "给老板写一封请假邮件"),
    ("给妈妈买什么礼物好", "给母亲买什么礼物好"),
    ("tips for dealing with difficult bosses", "tips for dealing with difficult managers"),
]
# Not one slot: the rest is not word for word, or nothing names a person by role.
NOT_A_SWAP = [
    ("write an email to my boss asking for leave", "write a short email to my client about the invoice"),
    ("how do i become a teacher", "how do i become a pilot"),
    ("给老师写一封感谢信", "给老师写一封道歉信"),
]


@pytest.mark.parametrize("a,b", ANOTHER_PERSON)
def test_one_role_for_another_is_another_person(a, b):
    assert swapped(a, b) and swapped(b, a)


@pytest.mark.parametrize("a,b", ONE_PERSON + NOT_A_SWAP)
def test_words_of_one_role_or_other_edits_are_no_person_swap(a, b):
    assert swapped(a, b) is None


def test_the_words_are_returned_as_written():
    assert swapped("怎么给女朋友道歉", "怎么给男朋友道歉") == ("男朋友", "女朋友")


@pytest.mark.integration
@pytest.mark.parametrize("cached,probe", [ANOTHER_PERSON[0], ANOTHER_PERSON[4]])
def test_another_person_is_no_hit(one_pair, cached, probe):
    for a, b in ((cached, probe), (probe, cached)):
        found = one_pair(a, b)
        assert found.zone is not Zone.HIT
        assert found.has_reason("name_swapped"), found.reasons
