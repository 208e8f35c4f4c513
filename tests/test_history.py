"""Histories read turn by turn (decide.history): the alignment, and what a changed turn means.

The conversations are written for these tests (issue 18's shapes, in both languages): the
same last message after another offer, a changed early detail, a changed first request, a
reference to another item must be misses; a changed aside, reworded small talk and the same
conversation again must still be hits.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from smartcache import Zone
from smartcache.context import turn_records
from smartcache.decide import history
from smartcache.fingerprint import Signature
from conftest import A, U, remember

CHAT_EN = ["haha ok", "Glad you're enjoying it!", "thanks!", "You're welcome!", "nice", "Anything else?"]
CHAT_ZH = ["哈哈好的", "不客气~", "谢谢", "不客气！", "嗯嗯", "还有什么需要吗？"]


def convo(*texts: str) -> list[dict]:
    """Alternating user / assistant turns, the first and the last a user's."""
    return [U(t) if i % 2 == 0 else A(t) for i, t in enumerate(texts)]


def records(*texts: str):
    return turn_records([("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)])


# --- the alignment ------------------------------------------------------------------------------

def test_identical_histories_have_no_changes():
    turns = records("Close my savings account", "Sure.", *CHAT_EN)
    diff = history.align(turns, turns)
    assert diff.identical and diff.first_divergence is None and diff.matched == len(turns)


def test_one_changed_turn_of_forty_is_the_only_change():
    base = [f"question {i} about the lease of flat {i}" if i % 2 == 0 else f"answer {i}" for i in range(40)]
    edited = list(base)
    edited[22] = "question 22 about the lease of flat 99"
    diff = history.align(records(*edited), records(*base))
    assert [c.kind for c in diff.changes] == ["edited"]
    assert diff.changes[0].probe.pos == 23 and diff.first_divergence == 23 and diff.matched == 39
    assert diff.pairs == diff.changes and not diff.only_probe and not diff.only_cached


def test_inserted_small_talk_exchange_is_an_added_pair_of_chatter():
    plain = records("How do I reset my router?", "Hold the button for 10 seconds.")
    chatty = records("How do I reset my router?", "Hold the button for 10 seconds.", "thanks!", "You're welcome!")
    diff = history.align(chatty, plain)
    assert [c.kind for c in diff.changes] == ["added", "added"]
    assert all(c.chatter for c in diff.changes) and len(diff.only_probe) == 2


def test_dropped_exchange_pairs_the_similar_turns_and_leaves_the_rest_unpaired():
    long = records("Book a room in Lisbon", "Which dates?", "By the way, is it sunny there?", "Mostly, yes.",
                   "From the 3rd to the 5th", "Done.")
    short = records("Book a room in Lisbon", "Which dates?", "From the 3rd to the 6th", "Done.")
    diff = history.align(long, short)
    kinds = {(c.kind, (c.probe or c.cached).pos) for c in diff.changes}
    assert ("edited", 5) in kinds                        # the dates, paired although shifted
    assert {("added", 3), ("added", 4)} <= kinds         # the aside exchange only one side has


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "thanks", "ok", "x y"]), max_size=30),
       st.lists(st.sampled_from(["a", "b", "c", "thanks", "ok", "x z"]), max_size=30))
def test_alignment_accounts_for_every_turn(left, right):
    a, b = records(*left), records(*right)
    diff = history.align(a, b)
    probe_side = sum(c.probe is not None for c in diff.changes)
    cached_side = sum(c.cached is not None for c in diff.changes)
    assert diff.matched + probe_side == len(a) and diff.matched + cached_side == len(b)
    assert diff.identical == ([t.digest for t in a] == [t.digest for t in b])
    assert history.align(a, a).identical


def test_records_survive_the_signature_json():
    sig = Signature(text="x", domain="general", skeleton="other", entities=(), flags=frozenset(), negations=0,
                    sides=(), context_entities=frozenset(), history_hash="h", has_context=True,
                    turns=records("Where is order 55120?", "It shipped."))
    back = Signature.from_json(json.loads(json.dumps(sig.to_json())))
    assert back.turns == sig.turns


def test_an_entry_without_records_is_left_to_the_context_rules():
    sig = Signature(text="x", domain="general", skeleton="other", entities=(), flags=frozenset(), negations=0,
                    sides=(), context_entities=frozenset(), history_hash="h", has_context=True)
    old = Signature.from_json({k: v for k, v in sig.to_json().items() if k != "turns"})
    assert history.weigh(sig, old) == history.HistoryFinding(None)


def test_reply_needs_the_turn_before_it():
    assert history.is_reply("sure, go ahead") and history.is_reply("option b") and history.is_reply("那就订吧")
    assert history.is_reply("can i still change it?")              # a reference
    assert not history.is_reply("what is a cname record?") and not history.is_reply("怎么转成pdf？")
    assert not history.accepts("开通微粒贷") and not history.accepts("track my parcel")   # short, but a request


@pytest.mark.parametrize("text", ["does the cheaper option ship for free?", "is the second place you mentioned open late?",
                                  "你刚说的第二家远吗", "便宜的那个有现货吗", "他最快什么时候能来"])
def test_definite_descriptions_point_back(text):
    assert history.points_back(text)


# --- the decisions ------------------------------------------------------------------------------

MISSES = [
    ("offer-en", convo("I want to change my gym membership", "Sure, I can help.", *CHAT_EN, "What are my options?",
                       "Shall I pause the membership for a month?", "sure, go ahead"),
     convo("I want to change my gym membership", "Sure, I can help.", *CHAT_EN, "What are my options?",
           "Shall I end the membership now?", "sure, go ahead"), "reply_target_changed", "pause"),
    ("refund-en", convo("I'd like a refund for my order", "I can help. Shall I refund to the card?", "ok do it"),
     convo("I'd like a refund for my order", "I can help. Shall I refund as store credit?", "ok do it"),
     "reply_target_changed", "turn 2 (assistant)"),
    ("offer-zh", convo("我想订明天去上海的高铁", "有两个车次：G1 上午8点，G3 下午2点。推荐 G1，要订吗？", "好的，就这个"),
     convo("我想订明天去上海的高铁", "有两个车次：G1 上午8点，G3 下午2点。推荐 G3，要订吗？", "好的，就这个"),
     "reply_target_changed", "g1"),
    ("date-en", convo("My flight on the 3rd to Lisbon needs changing", "Let me look at that booking.",
                      *CHAT_EN * 2, "can I still change it?"),
     convo("My flight on the 13th to Lisbon needs changing", "Let me look at that booking.",
           *CHAT_EN * 2, "can I still change it?"), "history_fact_changed", "turn 1 (user)"),
    ("order-en", convo("Where is order 55120?", "It shipped yesterday.", *CHAT_EN, "when will it arrive?"),
     convo("Where is order 55210?", "It shipped yesterday.", *CHAT_EN, "when will it arrive?"),
     "history_fact_changed", "55120"),
    ("flat-en", convo("I'm interested in the 2-bedroom flat on Elm Street", "Great choice, it's bright.",
                      *CHAT_EN, "does it have a balcony?"),
     convo("I'm interested in the studio on Elm Street", "Great choice, it's bright.",
           *CHAT_EN, "does it have a balcony?"), "history_fact_changed", "studio"),
    ("first-en", convo("Close my savings account", "I can do that.", *CHAT_EN, "my credit card is fine, keep it",
                       "Noted.", "right, close that one then"),
     convo("close my credit card", "I can do that.", *CHAT_EN, "my savings account is fine, keep it",
           "Noted.", "right, close that one then"), "history_fact_changed", "turn 1 (user)"),
    ("date-zh", convo("我订了3号去成都的机票", "好的，我看一下这个订单。", *CHAT_ZH * 2, "还能改签吗？"),
     convo("我订了13号去成都的机票", "好的，我看一下这个订单。", *CHAT_ZH * 2, "还能改签吗？"), "history_fact_changed", "3"),
    ("first-zh", convo("帮我退掉这件外套", "可以，请提供订单号。", "订单号是 88123", "收到。", "那就办吧"),
     convo("帮我换一件外套", "可以，请提供订单号。", "订单号是 88123", "收到。", "那就办吧"), "history_fact_changed", "turn 1"),
    # The offer follows an "ok": a short reply to small talk, but one that names a number is the offer.
    ("offer-after-ok-en", convo("Can you help me pick a phone plan?", "Sure, what do you use it for?", "ok",
                                "Then the 20 GB plan at $35 a month fits. Shall I sign you up?", "yes please"),
     convo("Can you help me pick a phone plan?", "Sure, what do you use it for?", "ok",
           "Then the 50 GB plan at $55 a month fits. Shall I sign you up?", "yes please"),
     "reply_target_changed", "turn 4 (assistant)"),
    ("offer-after-ok-zh", convo("我想给孩子报个游泳班", "好的，孩子几岁了？", "嗯嗯", "那推荐周六上午9点的班，12节课1800元，要报吗？", "行，就这么办吧"),
     convo("我想给孩子报个游泳班", "好的，孩子几岁了？", "嗯嗯", "那推荐周日下午3点的班，10节课1500元，要报吗？", "行，就这么办吧"),
     "reply_target_changed", "turn 4 (assistant)"),
]


@pytest.mark.parametrize("verifier", [True, False], ids=["verifier", "rules-only"])
@pytest.mark.parametrize("name, cached, probe, reason, shown", MISSES, ids=[m[0] for m in MISSES])
def test_changed_history_is_never_a_hit(make_cache, verifier, name, cached, probe, reason, shown):
    cache = make_cache(use_verifier=verifier)
    remember(cache, cached, f"the answer for {name}")
    decision = cache.lookup(probe, session="s1")
    assert decision.zone is Zone.MISS and decision.answer is None, decision.reasons
    assert decision.has_reason(reason), decision.reasons
    detail = next(r.detail for r in decision.reasons if r.code == reason)
    assert shown in detail                 # explain names the turn and what changed


def test_a_difference_the_context_vector_cannot_see_is_not_passed_to_the_verifier(cache):
    """An anecdote with a name changed twenty turns back, under a self-contained question: no
    veto can say it matters, but the context vectors are equal (the view keeps five turns),
    so the verifier would judge two histories as one. It may not."""
    filler = [t for i in range(10) for t in (f"Step {i}: what next with the router setup?", f"Now do step {i + 1}.")]
    cached = convo("Help me set up my new router", "Sure.", "my brother Tom is visiting", "Nice!",
                   *filler, "What is the default admin password?")
    probe = convo("Help me set up my new router", "Sure.", "my neighbour Greg is visiting", "Nice!",
                  *filler, "What is the default admin password?")
    remember(cache, cached, "admin / admin, printed on the label")
    decision = cache.lookup(probe, session="s1")
    assert decision.zone is Zone.MISS and decision.has_reason("history_unseen"), decision.reasons


HITS = [
    ("aside-en", convo("How do I reset my router password?", "Hold the reset button for 10 seconds.",
                       "lol my cat just knocked over my coffee", "Oh no, hope the cat is fine!",
                       "What's the default admin password after the reset?"),
     convo("How do I reset my router password?", "Hold the reset button for 10 seconds.",
           "ugh it's raining again here", "Sorry to hear that, stay dry!",
           "What's the default admin password after the reset?")),
    ("thanks-en", convo("How do I reset my router password?", "Hold the reset button for 10 seconds.",
                        "What's the default admin password after the reset?"),
     convo("How do I reset my router password?", "Hold the reset button for 10 seconds.", "thanks", "You're welcome!",
           "What's the default admin password after the reset?")),
    ("chatter-zh", convo("宽带总是断网怎么办", "先重启光猫和路由器试试。", "哈哈好的", "不客气~", "路由器要怎么恢复出厂设置"),
     convo("宽带总是断网怎么办", "先重启光猫和路由器试试。", "嗯嗯明白", "好的", "路由器要怎么恢复出厂设置")),
    ("welcome-en", convo("How do I reset my router password?", "Hold the reset button for 10 seconds.", "ok thanks",
                         "Glad to help, anything else?", "What's the default admin password after the reset?"),
     convo("How do I reset my router password?", "Hold the reset button for 10 seconds.", "ok thanks",
           "No problem at all!", "What's the default admin password after the reset?")),
    ("same-zh", convo("我想订明天去上海的高铁", "有两个车次，推荐 G1，要订吗？", "好的，就这个"),
     convo("我想订明天去上海的高铁", "有两个车次，推荐 G1，要订吗？", "好的，就这个")),
]


@pytest.mark.parametrize("name, cached, probe", HITS, ids=[h[0] for h in HITS])
def test_history_that_the_request_cannot_depend_on_still_hits(cache, name, cached, probe):
    entry = remember(cache, cached, f"the answer for {name}")
    decision = cache.lookup(probe, session="s1")
    assert decision.zone is Zone.HIT, decision.reasons
    assert decision.entry.cache_id == entry
    assert not decision.has_reason("history_fact_changed") and not decision.has_reason("reply_target_changed")


def test_a_changed_opening_fact_is_a_veto_though_the_request_names_none_of_it():
    """'My cat is 14' / 'my puppy is 3 months' before 'what food should I give her?': the
    request shares no word with the changed turn, yet depends on it."""
    a = Signature.from_json({**_sig("what food should i give her?"), "turns": [
        t.to_json() for t in records("My cat is 14 years old.", "A senior kitty! What's your question?")]})
    b = Signature.from_json({**_sig("what food should i give her?"), "turns": [
        t.to_json() for t in records("My puppy is 3 months old.", "Aww, a young pup! What's your question?")]})
    found = history.weigh(a, b)
    assert found.veto is not None and found.veto.code == "history_fact_changed" and not found.equivalent
    assert "turn 1 (user)" in found.veto.detail and "14" in found.veto.detail


def test_an_aside_is_skipped_but_a_changed_latest_request_is_not():
    """Two different anecdotes answered in a word ("That sounds loud!") before the last turn: an
    aside, whatever the last turn names, so no veto. Two different requests there instead are
    the latest exchange, which is never vouched for as an aside, and under a turn that names
    nothing of its own they are a veto (``referent_changed``)."""
    def sig(text, aside, reply):
        return Signature.from_json({**_sig(text), "turns": [t.to_json() for t in records(
            "I want to learn the guitar", "Great, acoustic or electric?", aside, reply)]})
    drums, rain = ("haha my neighbour plays drums all night", "That sounds loud!"), \
        ("ugh it's been raining for days", "Sorry to hear that!")
    named, bare = "which guitar do you recommend for beginners?", "which one do you recommend for beginners?"
    for text in (named, bare):
        found = history.weigh(sig(text, *drums), sig(text, *rain))
        assert found.veto is None and all(r.code == "aside_changed" for r in found.signals)
    piano = ("what about the piano, is it easier?", "The piano is easier to start: notes are laid out in a row.")
    drum_kit = ("and drums, are they easier?", "Drums take coordination; most beginners find them harder.")
    found = history.weigh(sig(named, *piano), sig(named, *drum_kit))
    assert found.veto is None and not found.equivalent
    assert any("in the latest exchange" in r.detail for r in found.signals)
    assert history.weigh(sig(bare, *piano), sig(bare, *drum_kit)).veto.code == "referent_changed"


def _sig(text: str) -> dict:
    return Signature(text=text, domain="general", skeleton="other", entities=(), flags=frozenset(), negations=0,
                     sides=(), context_entities=frozenset(), history_hash=text, has_context=True).to_json()


# --- a last turn with no subject of its own (issue 27) ------------------------------------------

SWITCHED = [   # (cached conversation, probe conversation): the same short question, another referent
    (convo("Tell me about Lisbon.", "Lisbon is Portugal's hilly capital, known for trams and fado.",
           "Is it expensive?"),
     convo("Tell me about Lisbon.", "Lisbon is Portugal's hilly capital, known for trams and fado.",
           "Is it expensive?", "Mid-range: about 100 euros a day.", "And Porto?",
           "Porto is smaller, on the Douro, famous for port wine.", "Is it expensive?")),
    (convo("去成都玩三天怎么安排", "第一天宽窄巷子，第二天大熊猫基地，第三天都江堰。", "那边吃饭贵吗"),
     convo("去成都玩三天怎么安排", "第一天宽窄巷子，第二天大熊猫基地，第三天都江堰。", "那边吃饭贵吗",
           "不贵，人均五六十就能吃得很好。", "重庆呢", "重庆可以去洪崖洞、解放碑和磁器口。", "那边吃饭贵吗")),
    (convo("我觉得《流浪地球》这部电影不错", "是的，特效和剧情都很扎实。", "你看过吗"),
     convo("我觉得《流浪地球》这部电影不错", "是的，特效和剧情都很扎实。", "你看过吗", "我了解过它的内容。",
           "那《三体》这本书呢", "《三体》是刘慈欣的科幻小说，讲三体文明。", "你看过吗")),
    (convo("What's a good family SUV?", "The Toyota Highlander is roomy and reliable.", "Why?"),
     convo("What's a good family SUV?", "The Toyota Highlander is roomy and reliable.", "What about a minivan?",
           "The Honda Odyssey has sliding doors and more cargo room.", "Why?")),
]
SAME_REFERENT = [   # the twins: the same latest exchange, with an aside reworded before it
    (convo("Tell me about Lisbon.", "Lisbon is Portugal's hilly capital.", "Is it expensive?"),
     convo("Tell me about Lisbon.", "Lisbon is Portugal's hilly capital.", "Is it expensive?")),
    (convo("my cat knocked my coffee over lol", "Oh no!", "去成都玩三天怎么安排", "第一天宽窄巷子，第二天大熊猫基地。",
           "那边吃饭贵吗"),
     convo("haha my cat just spilled my coffee", "Oops!", "去成都玩三天怎么安排", "第一天宽窄巷子，第二天大熊猫基地。",
           "那边吃饭贵吗")),
]


@pytest.mark.parametrize("verifier", [True, False], ids=["verifier", "rules-only"])
@pytest.mark.parametrize("cached, probe", SWITCHED, ids=["lisbon-en", "chengdu-zh", "book-zh", "why-en"])
def test_a_subjectless_turn_after_another_exchange_is_never_a_hit(make_cache, cached, probe, verifier):
    cache = make_cache(use_verifier=verifier)
    remember(cache, cached, "the answer about the first subject")
    found = cache.lookup(probe, session="s1")
    assert found.zone is not Zone.HIT, found.reasons
    assert found.has_reason("referent_changed"), found.reasons


@pytest.mark.parametrize("cached, probe", SAME_REFERENT, ids=["same-en", "aside-zh"])
def test_a_subjectless_turn_with_the_same_latest_exchange_is_not_refused(make_cache, cached, probe):
    cache = make_cache(use_verifier=False)
    remember(cache, cached, "the answer")
    found = cache.lookup(probe, session="s1")
    assert not found.has_reason("referent_changed"), found.reasons


@pytest.mark.parametrize("text, expected", [
    ("is it expensive?", True), ("你看过吗", True), ("why?", True), ("多少钱", True), ("and porto?", True),
    ("那本书呢", True), ("what about the honda?", True), ("那边冷吗", True),
    ("is the louvre expensive?", False), ("怎么申请信用卡呢", False), ("how do i reset my password?", False),
    ("and how do i cancel my subscription?", False), ("成都三天怎么玩", False)])
def test_which_turns_depend_on_the_latest_exchange(text, expected):
    assert history.depends_on_latest(text) is expected
