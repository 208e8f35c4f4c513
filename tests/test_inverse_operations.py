"""Inverse operations on one object are opposite actions, a hard veto (lexicon version 3, beside
upload / download and import / export): back up / restore, connect / disconnect, link / unlink
(绑定 / 解绑), follow / unfollow (关注 / 取消关注), mute / unmute (免打扰 / 取消免打扰), pin / unpin
(置顶 / 取消置顶), freeze / unfreeze (冻结 / 解冻), mount / unmount, add or create / remove or
delete (添加 / 删除), join / leave (加入 / 退出). The verifier served "支付宝怎么绑定银行卡" to
"支付宝怎么解绑银行卡" at one entry a case; the pairs' figures are in docs/eval/wrong-answers.md."""

from __future__ import annotations

import dataclasses

import pytest

from smartcache.decide import Zone
from smartcache.decide.near_exact import near_repeat
from smartcache.fingerprint.lexicon import antonym_pairs
from smartcache.fingerprint.tags import action_sides

from conftest import U, opposite_actions, remember

REVERSED = [
    ("How do I back up my Signal messages?", "How do I restore my Signal messages from a backup?"),
    ("How do I connect a Switch controller to my PC?", "How do I disconnect a Switch controller from my PC?"),
    ("How do I link my Spotify account to Alexa?", "How do I unlink my Spotify account from Alexa?"),
    ("How do I follow a topic on Quora?", "How do I unfollow a topic on Quora?"),
    ("How do I mute notifications from one app?", "How do I unmute notifications from one app?"),
    ("How do I freeze the first column in Numbers?", "How do I unfreeze the first column in Numbers?"),
    ("How do I add a watermark to a PDF?", "How do I remove a watermark from a PDF?"),
    ("How do I create a cron job on Ubuntu?", "How do I delete a cron job on Ubuntu?"),
    ("How do I join a Teams meeting by phone?", "How do I leave a Teams meeting by phone?"),
    ("淘宝怎么绑定支付宝账号", "淘宝怎么解绑支付宝账号"),
    ("小红书怎么关注别人", "小红书怎么取消关注别人"),
    ("企业微信群怎么设置免打扰", "企业微信群怎么取消免打扰"),
    ("钉钉消息怎么置顶", "钉钉消息怎么取消置顶"),
    ("电脑照片怎么备份到网盘", "电脑照片怎么从网盘的备份恢复"),
    ("Excel怎么添加批注", "Excel怎么删除批注"),
    ("怎么加入学校的飞书群", "怎么退出学校的飞书群"),
    ("钉钉群怎么设置免打扰", "钉钉群怎么解除免打扰"),       # a review's: undo phrasings first missed
    ("微信聊天怎么置顶", "微信聊天怎么解除置顶"),
    ("蓝牙音箱怎么连接", "蓝牙音箱怎么取消连接"),
    ("微信怎么登录账号", "微信怎么退出账号"),
]
SAME_SIDE = [
    ("How do I restore my phone from an iCloud backup?", "How can I restore my phone using an iCloud backup?"),
    ("How do I delete a page in Google Docs?", "How do I remove a page in Google Docs?"),
    ("How do I create a new folder in Gmail?", "How do I add a new folder in Gmail?"),
    ("How do I unlink my card from Google Pay?", "How do I unbind my card from Google Pay?"),
    ("支付宝怎么解绑银行卡", "支付宝怎么解除绑定银行卡"),
    ("微博怎么取消关注", "微博怎么取关"),
    ("怎么删除微信好友", "怎么删掉微信好友"),
    ("怎么退出登录", "怎么登出"),                  # logging out, not leaving a group
    ("抖音怎么删除关联账号", "抖音怎么取消关联账号"),
]


# Lexicon version 4: more operations and their undoing, and undo words on older pairs' English
# sides (unhide, unblock; 取消隐藏 and 取消拉黑 were tried and taken back: 隐藏了怎么取消 asks the
# same). The packaged verifier served "plug in my monitor" to "unplug my monitor" and "zoom in on
# a PDF" to "zoom out on a PDF".
V4 = [
    ("How do I zoom in on a PDF?", "How do I zoom out on a PDF?"),
    ("How do I plug in my monitor?", "How do I unplug my monitor?"),
    ("How do I opt in to marketing emails?", "How do I opt out of marketing emails?"),
    ("How do I attach an EBS volume to an instance?", "How do I detach an EBS volume from an instance?"),
    ("How do I maximize a window with the keyboard?", "How do I minimize a window with the keyboard?"),
    ("How do I hide a column in Excel?", "How do I unhide a column in Excel?"),
    ("How do I block a number on my iPhone?", "How do I unblock a number on my iPhone?"),
    ("How do I zoom into a PDF?", "How do I zoom out of a PDF?"),      # a review's
    ("How do I zoom in on Google Maps?", "How do I zoom back out on Google Maps?"),
    ("怎么展开所有评论", "怎么收起所有评论"),
    ("窗口怎么最大化", "窗口怎么最小化"),
    ("显示器的线怎么插上", "显示器的线怎么拔掉"),
]
REVERSED += V4
SAME_SIDE += [
    ("How do I zoom in on a PDF?", "How can I zoom in on a PDF?"),
    ("Should I unplug my router at night?", "Is it better to unplug the router at night?"),
    ("How do I opt out of data sharing?", "How can I opt-out of data sharing?"),
    ("窗口怎么最大化", "如何让窗口最大化"),
    ("Excel怎么取消隐藏列", "Excel如何取消隐藏列"),
    ("怎么把聊天折叠起来", "怎么把聊天收起来"),
    # a review's: an undoing 取消 not right before the verb (so 隐藏 / 拉黑 stay one side), and
    # "attached" as an adjective
    ("微信拉黑了怎么取消", "微信怎么取消拉黑"),
    ("照片隐藏了怎么取消", "怎么取消隐藏照片"),
    ("How do I remove an attached disk from a VM?", "How do I detach a disk from a VM?"),
]


@pytest.mark.parametrize("a, b", REVERSED)
def test_an_inverse_operation_is_an_opposite_action(a, b):
    assert opposite_actions(a, b)


@pytest.mark.parametrize("a, b", SAME_SIDE)
def test_the_same_operation_reworded_is_not(a, b):
    assert not opposite_actions(a, b)


@pytest.mark.parametrize("a, b", [REVERSED[0], REVERSED[2], REVERSED[9], REVERSED[10], V4[0], V4[1]])
def test_the_cache_refuses_an_inverse_operation(cache, a, b):
    remember(cache, [U(a)], "how to do the first one")
    found = cache.lookup([U(b)], session="s1")
    assert found.zone is not Zone.HIT and found.has_reason("opposite_actions"), found.reasons


def test_a_pair_added_later_comes_after_every_older_one():
    """Sides are positional and stored with entries: the pairs of version 3 follow the 27 of
    version 2 in both files' order (an English-only pair of version 2 stays where it was)."""
    pairs = antonym_pairs()
    assert len(pairs) > 27
    assert r"\baccept\b" in pairs[26][0]                # version 2's last pair, English only
    assert "连接" in pairs[27][0]                        # the first of version 3
    assert action_sides("write an email accepting the offer")[26] == 1


def test_an_entry_written_before_the_new_pairs_still_takes_the_near_exact_path(cache):
    cached = cache.prepare([U("How do I change the email address on my account?")], session="s1").fingerprint
    probe = cache.prepare([U("How do I chnage the email adress on my acount?")], session="s1").fingerprint
    old = dataclasses.replace(cached.signature, sides=cached.signature.sides[:27])
    assert near_repeat(probe.signature, old) is not None


def test_a_slip_in_an_operation_word_is_still_a_repeat_and_the_inverse_never(cache):
    entry = remember(cache, [U("How do I follow a hashtag on Instagram?")], "answer")
    found = cache.lookup([U("How do I folow a hashtag on Instagram?")], session="s1")
    assert found.zone is Zone.HIT and found.has_reason("near_exact_match") and found.entry.cache_id == entry
    assert not cache.lookup([U("How do I unfollow a hashtag on Instagram?")], session="s1").has_reason(
        "near_exact_match")


# A reversing prefix written apart is the word written together (context.normalize): "un-follow"
# read as "follow" was served the answer to "follow".
PREFIX_APART = [
    ("How do I subscribe to a YouTube channel?", "How do I un-subscribe from a YouTube channel?"),
    ("How do I follow someone on Instagram?", "How do I un-follow someone on Instagram?"),
    ("How do I connect my AirPods to my laptop?", "How do I dis-connect my AirPods from my laptop?"),
    ("How do I activate my Facebook account?", "How do I de-activate my Facebook account?"),
]


@pytest.mark.parametrize("a, b", PREFIX_APART)
def test_a_reversing_prefix_written_apart_is_the_opposite_action(cache, a, b):
    assert opposite_actions(a, b)
    remember(cache, [U(a)], "…")
    assert cache.lookup([U(b)], session="s1").zone is Zone.MISS


@pytest.mark.parametrize("together, apart", [
    ("How do I unsubscribe from a YouTube channel?", "How do I un-subscribe from a YouTube channel?"),
    ("How do I deactivate my Facebook account?", "How do I De-activate my Facebook account?"),
])
def test_the_prefix_apart_or_together_is_one_request(cache, together, apart):
    remember(cache, [U(together)], "…")
    assert cache.lookup([U(apart)], session="s1").zone is Zone.HIT
