"""One person's data never reaches another session (the brief's "other sessions' personal
answers"): what ``learn.personal`` reads as personal, and a global entry holding it served
only to the session that was given it, however it entered the pool."""

from __future__ import annotations

import pytest

from smartcache import Zone
from smartcache.learn.personal import personal_data

from conftest import A, U

PERSONAL = [
    # one's own records, asked about rather than how they work
    "Where is my order? It was due on Tuesday.",
    "What's the balance on my savings account?",
    "Has my refund been processed yet?",
    "How much did I spend on takeaway last month?",
    "我的快递怎么还没到",
    "帮我查一下话费余额",
    "我上个月花了多少钱",
    # what the user said before, or a fact only the user has
    "Do you remember what I told you about my sister?",
    "Remind me, which hotel did I say I booked?",
    "我上次跟你说的那个方案是哪个",
    "我生日是几号来着",
    "How old is my son?",
    "我家狗叫什么",
    # a name with a surname, part of a card number, an id given with its marker (stop 47)
    "Hi, I'm Priya Nair, my card ends in 4821. I was charged twice.",
    "I can see order #48213, a blender, shipped on Monday.",
    "Can you check booking reference AB12345 for me?",
    "尾号4821的信用卡被重复扣款了",
    "订单号20231104123什么时候发货",
    # an answer that rests on what the user said about themselves
    "Based on my goals, how many calories should I eat per day?",
    "根据我的情况，应该选哪种保险",
    # a review's: other ways to give a card's ending, a name
    "my card ending 4821 was declined",
    "Visa ending in ****4821",
    "the last four digits of my card are 4821",
    "卡号末四位4821被冻结了",
    "My name's Priya Nair and I need a refund",
]
NOT_PERSONAL = [
    "How do I track my order?",
    "How do I change the email on my account?",
    "How many days until I get my refund?",         # a store's policy answers it alike for all
    "What should I pack for a week in Lisbon?",
    "What breed of cat sheds the least?",
    "怎么查看快递物流",
    "退款一般几天到账",
    "信用卡逾期一天有影响吗",
    "一斤等于多少克来着",
    "珠峰有多高",
    "I'm new here, how do I post a question?",
    "I'm Italian, what should I cook for Christmas?",
    "What does error code 4821 mean?",
    "Where is the order number printed on a receipt?",
    "订单号在哪里看",
    "What is a good daily calorie goal for weight loss?",
    "Windows 10 support ends in 2025.",                   # an ending that is no card's
    "What are the last 4 digits of 7^2024?",
    "根据我的理解，这个说法对吗",
    "This is Microsoft Excel, a spreadsheet program.",
]


@pytest.mark.parametrize("text", PERSONAL)
def test_what_only_one_person_can_be_asked_is_personal(text):
    assert personal_data(text.lower()) is not None


@pytest.mark.parametrize("text", NOT_PERSONAL)
def test_what_anyone_asks_alike_is_not(text):
    assert personal_data(text.lower()) is None


def test_a_global_entry_with_personal_data_serves_only_its_own_session(cache):
    mine = [U("Where is my order? It was due on Tuesday.")]
    stored = cache.store(mine, "Your order #4471 is in Leeds and arrives tomorrow.", session="alice")
    cache.promote(stored.cache_id, to_global=True)          # an admin's promotion, say
    assert cache.lookup(mine, session="alice").zone is Zone.HIT
    for other in ("bob", None):
        assert cache.lookup(mine, session=other).zone is Zone.MISS, other


def test_a_global_entry_without_it_still_serves_everyone(cache):
    faq = [U("How do I track my order?")]
    stored = cache.store(faq, "Open Orders, pick the order and tap Track.", session="alice")
    cache.promote(stored.cache_id, to_global=True)
    assert cache.lookup(faq, session="bob").zone is Zone.HIT


def test_personal_data_in_the_history_keeps_it_too(cache):
    told = [U("My name is Priya and my flight is on March 14."), A("Noted, Priya."),
            U("When did I say my flight was?")]
    stored = cache.store(told, "You said March 14.", session="priya")
    cache.promote(stored.cache_id, to_global=True)
    assert cache.lookup(told, session="priya").zone is Zone.HIT
    assert cache.lookup(told, session="someone-else").zone is Zone.MISS


def test_the_whole_conversation_is_read_when_the_answer_is_written(cache):
    """The system prompt and long turns are kept in the signature only in part: the reading is
    made on the whole conversation at write time and kept with the entry."""
    system = {"role": "system", "content": "You are a banking assistant with access to the user's linked accounts."}
    asked = [system, U("Summarize my spending this month.")]
    stored = cache.store(asked, "You spent 1,234 EUR, most of it on rent.", session="alice")
    assert cache.get(stored.cache_id).personal == "the user's own data"
    cache.promote(stored.cache_id, to_global=True)
    assert cache.lookup(asked, session="alice").zone is Zone.HIT
    assert cache.lookup(asked, session="bob").zone is Zone.MISS
    middle = "I'm comparing laptops for work. " * 12 + "My name is Priya, by the way. " + "Thanks for the help. " * 12
    long_turn = [U(middle + "Which one has the best battery?")]
    stored = cache.store(long_turn, "The second one, at 14 hours.", session="priya")
    assert cache.get(stored.cache_id).personal == "own name"
    assert cache.get(cache.store([U("How do I track my order?")], "Open Orders.", session="s").cache_id).personal == ""


def test_an_entry_written_before_the_reading_was_kept_is_read_from_what_it_has(cache):
    mine = [U("Where is my order? It was due on Tuesday.")]
    stored = cache.store(mine, "Your order #4471 is in Leeds.", session="alice")
    cache.backend.update(stored.cache_id, personal=None)
    cache.promote(stored.cache_id, to_global=True)
    assert cache.get(stored.cache_id).personal is None
    assert cache.lookup(mine, session="bob").zone is Zone.MISS


def test_another_session_s_personal_twin_does_not_hide_this_session_s_own_entry(cache):
    mine = [U("Where is my order? It was due on Tuesday.")]
    theirs = cache.store(mine, "Your order #1 is in Leeds.", session="alice")
    cache.promote(theirs.cache_id, to_global=True)
    own = cache.store(mine, "Your order #2 is in York.", session="bob")
    cache.promote(own.cache_id)
    found = cache.lookup(mine, session="bob")
    assert found.zone is Zone.HIT and found.entry.cache_id == own.cache_id


def test_personal_data_is_read_as_sent_and_as_normalised(cache):
    """Spelt-out digits, full-width signs and look-alike letters hide what the normalised text
    shows: the reading at write time takes both."""
    for text in ("我的卡号是六二二二零二一二三四五六七八，这张卡开户行是哪里？", "Email my receipt to jane＠example.com",
                 "M\u0443 name is Priya, what should I pack for Goa?"):
        stored = cache.store([U(text)], "An answer.", session="alice")
        assert cache.get(stored.cache_id).personal, text
