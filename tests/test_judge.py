"""The answer judge (smartcache.learn.judge): SAME only when nothing checkable differs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smartcache.learn import AnswerJudge, Judgement, Label

ROOT = Path(__file__).resolve().parent.parent

SAME, DIFFERENT, UNDECIDED = Label.SAME, Label.DIFFERENT, Label.UNDECIDED

# (cached, fresh, expected label, a word the reason must hold)
CASES = [
    # identical after normalisation (case, width, spacing, punctuation runs)
    ("The capital of France is Paris.", "the capital of france is paris", SAME, "identical"),
    ("退款一般3到5个工作日到账，请耐心等待。", "退款一般3到5个工作日到账,请耐心等待.", SAME, "identical"),
    ("(zh answer bq-k3483) 借贷时间段", "(zh answer bq-k3483) 借贷时间段", SAME, "identical"),
    # same meaning, reworded only a little
    ("You can reset your password from the login page by clicking on the forgot password link.",
     "You can reset your password from the login page by clicking the forgot password link.", SAME, "overlap"),
    ("您可以在登录页面点击忘记密码来重置您的密码，然后按照提示操作即可。",
     "您可以在登录页面点击忘记密码来重置你的密码，然后按照提示操作即可。", SAME, "overlap"),
    # numbers changed
    ("The flight from Paris to Rome takes about 2 hours.", "The flight from Paris to Rome takes about 3 hours.",
     DIFFERENT, "numbers"),
    ("这款手机的售价是3999元，下周一开始发售。", "这款手机的售价是4999元，下周一开始发售。", DIFFERENT, "numbers"),
    ("(zh answer bq-k3483) 借贷时间段", "(zh answer bq-k2596) 7抢购活动", DIFFERENT, "numbers"),
    ("(en answer qqp-k12) How do I learn Python?", "(en answer qqp-k13) How do I learn Python?", DIFFERENT, "numbers"),
    # negation
    ("You can take this medicine together with ibuprofen without any problem.",
     "You cannot take this medicine together with ibuprofen without any problem.", DIFFERENT, "negation"),
    ("这个套餐可以在国外使用，开通以后直接打电话就行。", "这个套餐不可以在国外使用，开通以后直接打电话就行。", DIFFERENT, "negation"),
    # a different entity
    ("The Eiffel Tower is in Paris, France, and was finished for the world fair.",
     "The Eiffel Tower is in Lyon, France, and was finished for the world fair.", DIFFERENT, "entities"),
    ("你可以去北京的故宫博物院参观，那里的建筑非常壮观。", "你可以去南京的故宫博物院参观，那里的建筑非常壮观。", DIFFERENT, "differ"),
    # code changed
    ("Install it with:\n```\npip install requests\n```\nthen import it in your script.",
     "Install it with:\n```\npip install httpx\n```\nthen import it in your script.", DIFFERENT, "differ"),
    ("Run `git rebase main` on your branch to bring it up to date with the latest changes.",
     "Run `git merge main` on your branch to bring it up to date with the latest changes.", DIFFERENT, "code"),
    # different meaning altogether
    ("Photosynthesis turns light, water and carbon dioxide into sugar and oxygen in plants.",
     "The stock market is a place where shares of public companies are bought and sold.", DIFFERENT, "overlap"),
    # too short or generic to tell
    ("Yes.", "Yes.", UNDECIDED, "generic"),
    ("好的", "好的", UNDECIDED, "generic"),
    ("I'm sorry, but I can't help with that.", "I'm sorry, but I can't help with that request.", UNDECIDED, "generic"),
    ("抱歉，我无法回答这个问题。", "抱歉，我无法回答这个问题。", UNDECIDED, "generic"),
    ("Paris.", "Rome.", UNDECIDED, "short"),
    ("Paris.", "Paris.", UNDECIDED, "short"),
    # short but specific and identical: an id or a number (an oracle engine's answers)
    ("(en answer qqp-k88024)", "(en answer qqp-k88024)", SAME, "identical"),
    ("It is 42.", "It is 42.", SAME, "identical"),
    ("(en answer qqp-k88024)", "(en answer qqp-k63514)", DIFFERENT, "differ"),
    ("在北京。", "在上海。", DIFFERENT, "differ"),
]


@pytest.mark.parametrize("cached,fresh,label,why", CASES, ids=[f"{c[2].value}-{i}" for i, c in enumerate(CASES)])
def test_compare(cached: str, fresh: str, label: Label, why: str) -> None:
    j = AnswerJudge().compare(cached, fresh)
    assert isinstance(j, Judgement)
    assert (j.label, why in j.reason) == (label, True), j


@pytest.mark.parametrize("cached,fresh,label,why", CASES, ids=[f"{c[2].value}-{i}" for i, c in enumerate(CASES)])
def test_symmetric(cached: str, fresh: str, label: Label, why: str) -> None:
    assert AnswerJudge().compare(fresh, cached).label == label


def test_encoder_meaning(encoder) -> None:
    judge = AnswerJudge(encoder)
    same = judge.compare("You can reset your password from the login page by clicking on the forgot password link.",
                         "You can reset your password from the login page by clicking the forgot password link.")
    assert same.label == SAME and same.similarity is not None and same.similarity > 0.95
    far = judge.compare("Photosynthesis turns light, water and carbon dioxide into sugar and oxygen in plants.",
                        "The stock market is a place where shares of public companies are bought and sold.")
    assert far.label == DIFFERENT and "cosine" in far.reason
    # A checkable difference decides before the encoder is asked.
    assert judge.compare("It costs 5 dollars.", "It costs 8 dollars.").similarity is None


def test_stream_answers_judged_by_key() -> None:
    """Oracle stream answers (scripts/build_streams.py): other keys are DIFFERENT, a repeat SAME."""
    path = ROOT / "build" / "streams" / "paraphrase-zh.jsonl"
    if not path.exists():
        pytest.skip("build/streams is absent (make streams builds it)")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[:300]]
    judge = AnswerJudge()
    for a, b in zip(rows, rows[1:]):
        got = judge.compare(a["answer"], b["answer"]).label
        if a["answer_key"] != b["answer_key"]:
            assert got == DIFFERENT, (a["answer"], b["answer"])
        assert judge.compare(a["answer"], a["answer"]).label in (SAME, UNDECIDED)


@pytest.mark.parametrize("cached, fresh, label, why", CASES)
def test_identical_is_compare_s_identity_rule(cached: str, fresh: str, label: Label, why: str) -> None:
    """The cheap check proven sharing runs on far candidates says SAME exactly where compare
    says SAME for being one text, never otherwise."""
    judged = AnswerJudge().compare(cached, fresh)
    assert AnswerJudge().identical(cached, fresh) == (judged.reason == "identical after normalisation")
