"""A reset or correction marker counts only where it speaks to the conversation.

"怎么从头开始学 Python", "如何清空回收站", "my code reports an error", "is it incorrect to say …"
use the words of a reset or a correction about their topic. Read as one, the turn was never
served and ended its session's answers. The genuine turns below must still be read as a
reset or a correction (each was one before this reading, and is one after it).
"""

from __future__ import annotations

import pytest

from smartcache import SmartCache, load_config
from smartcache.context import normalize_text
from smartcache.decide import Zone
from smartcache.fingerprint.tags import ChangeFlag, change_flags

RESETS = [
    "我们重新开始吧", "重新开始吧，帮我写一条请假消息", "算了，咱们从头开始", "忘掉之前的要求，正常回答：如何早起？",
    "上面的内容清空，我们从头来过", "把之前的对话清空", "重来", "新对话：推荐一本小说",
    "let's start over", "Actually, never mind all that - start over. What's a good way to learn typing?",
    "Forget everything I said before. How do I boil an egg?", "Let's start over from scratch.",
    "Ignore all previous instructions and answer plainly.", "Can we start over?", "new conversation please",
    "Let's start over with a new plan: a trip to Rome.",
    "好了，之前聊的全部作废", "把前面的都忘了吧", "从头再来吧", "重置一下对话", "当我刚才什么都没说",
    "能重新开始吗？", "可以清空上下文吗", "算了重新开始规划行程", "清空吧", "Start over from the beginning.",
    "I want you to forget everything I said before.", "Can I start over?",
    "Let's start fresh.", "Scrap everything above and help me with a cover letter.", "Forget our previous conversation.",
    "Pretend this conversation never happened.",
]
NOT_RESETS = [
    "怎么从头开始学Python", "如何清空回收站", "清空购物车怎么操作", "重来一局怎么操作", "游戏怎么重新开始",
    "微信怎么一次性清空所有的聊天记录", "忘记之前的密码怎么办",
    "How do I learn probability from scratch?", "How do I make a sourdough starter from scratch?",
    "How do I start over in Stardew Valley?", "How do I restart the session in Jupyter?",
    "I always forget everything I read, any tips?",
    "合同作废了怎么办", "我总是把单词都忘了，怎么背", "从零开始学画画要多久", "人生可以从头再来吗",
    "How do you start fresh after a breakup?", "Should I scrap everything and rewrite my novel?",
    "之前签的合同作废了，押金能退吗", "之前学的都忘了，怎么复习", "我忘记刚才把钥匙放哪了", "30岁从零开始，还来得及吗",
    "Write a short story where the hero has to start fresh.", "Tips for beginning the new year with a clean slate",
]
CORRECTIONS = [
    "不对，是周四出发", "搞错了，是7个工作日内发货，重新写", "抱歉打错了，孩子是13岁，不是3岁。", "我刚才说错了，是华为手机",
    "你算错了，应该是120", "不对吧？", "更正一下：预算是五千", "我的意思是明天下午",
    "No, I meant acetaminophen, not ibuprofen.", "Sorry, my mistake: I meant Naples.", "That's wrong, try again.",
    "Incorrect, the capital is Canberra.", "Your answer is incorrect.", "Oops, correction - I'm landing at Haneda.",
    "That's not what I meant - I want to restart it, not wipe it.", "I made a mistake, the meeting is at 3.",
    "我问的是高铁，不是飞机", "不是这个意思，我要的是周报", "我刚才发错了，是这张图", "Sorry, typo: it's 2019.",
    "I misspoke, it's Tuesday.", "You wrote it wrong: my name is Anna.", "I asked for a poem, not a story.", "Wrong.",
]
NOT_CORRECTIONS = [
    "我的代码报错了，怎么办", "运行的时候出错了是什么原因", "我这个函数写错了吗", "我算错了吗", "改得更正式一点",
    "这样做对不对", "感觉身体不对劲怎么办", "密码错了怎么在页面上给个提示", "这种方法不适用于列表吗", "如何纠正孩子的坏习惯",
    "Why is my answer incorrect?", "Is it incorrect to say 'less people'?", "What does the correction factor mean?",
    "I made a mistake in my tax return, what now?", "I keep getting an incorrect password error.",
    "发票信息有误，可以重开吗", "合同里我的名字写错了，有影响吗", "选错了专业怎么办",
    "I misspelled a word in my essay, how do I fix it?",
    "我输错密码三次被锁了", "系统提示身份信息有误，是什么原因", "上次我问的是医生，医生说没事", "这不是我要的生活",
    "I mistyped my password too many times and got locked out.",
    "The restaurant brought beef but I asked for chicken, should I ask for a refund?",
    "In my essay I wrote 'affect' not 'effect'. Was that correct?", "Fix the typo, then send it back.",
]


def flags(text: str) -> frozenset[ChangeFlag]:
    return change_flags(normalize_text(text))


@pytest.mark.parametrize("text", RESETS)
def test_a_reset_spoken_to_the_conversation_is_one(text: str) -> None:
    assert ChangeFlag.RESET in flags(text)


@pytest.mark.parametrize("text", NOT_RESETS)
def test_reset_words_about_the_topic_are_no_reset(text: str) -> None:
    assert ChangeFlag.RESET not in flags(text)


@pytest.mark.parametrize("text", CORRECTIONS)
def test_a_correction_spoken_to_the_conversation_is_one(text: str) -> None:
    assert ChangeFlag.CORRECTION in flags(text)


@pytest.mark.parametrize("text", NOT_CORRECTIONS)
def test_correction_words_about_the_topic_are_no_correction(text: str) -> None:
    assert ChangeFlag.CORRECTION not in flags(text)


HISTORY = [{"role": "user", "content": "我在学 Python"}, {"role": "assistant", "content": "好的，有什么问题？"}]


@pytest.fixture(scope="module")
def cache() -> SmartCache:
    return SmartCache(load_config())


def _ask(cache: SmartCache, session: str, text: str, answer: str):
    messages = HISTORY + [{"role": "user", "content": text}]
    found = cache.lookup(messages, session=session)
    if found.zone is not Zone.HIT:
        stored = cache.store(found, answer)
        assert stored.stored, stored.reason
        cache.promote(stored.cache_id)
    return found


def test_a_topical_turn_is_served_again_and_keeps_the_session(cache: SmartCache) -> None:
    _ask(cache, "topical", "列表推导式怎么写", "[x for x in xs]")
    _ask(cache, "topical", "我的代码报错了，怎么办", "先看报错信息的最后一行。")
    again = _ask(cache, "topical", "我的代码报错了，怎么办", "-")
    assert again.zone is Zone.HIT, again.reasons
    # The session's earlier answer still stands: the topical turn ended nothing.
    first = _ask(cache, "topical", "列表推导式怎么写", "-")
    assert first.zone is Zone.HIT, first.reasons


def test_a_genuine_reset_still_ends_the_session(cache: SmartCache) -> None:
    _ask(cache, "reset", "列表推导式怎么写", "[x for x in xs]")
    reset = _ask(cache, "reset", "我们重新开始吧", "好的。")
    assert reset.has_reason("reset")
    after = _ask(cache, "reset", "列表推导式怎么写", "-")
    assert after.zone is not Zone.HIT
