"""The near-exact path (issue 29): a repeat but for typos and courtesy is the same request;
what changes meaning never is. Examples written for this file, both ways, both languages."""

from __future__ import annotations

import random

import pytest

from smartcache import Zone
from smartcache.context import normalize_text
from smartcache.decide.near_exact import corrected, near_exact, tokens

from conftest import A, U, remember

SAME = [
    # English: a dropped, doubled, swapped or neighbouring letter; courtesy; case and spacing
    ("How do I cancel my gym membership?", "How do I cancle my gym membership?"),
    ("What is the boiling point of water at altitude?", "What is the boiling piont of water at altitude?"),
    ("Best keyboard for touch typing", "Best keybaord for touch typing"),
    ("How do I back up my photos to an external drive?", "hi, how do I back up my photos to an externall drive? thanks"),
    ("Why does my bread come out dense?", "Why does my bread come out dense"),
    ("Could you please recommend a sci-fi novel?", "recommend a sci-fi novel"),
    ("I'm stuck on level 3, any tips?", "Im stuck on level 3, any tips?"),
    ("How do I set up an e-mail filter?", "How do I set up an email filter?"),
    ("Do I need a visa for Peru?", "Do I need a vissa for Peru?"),     # a letter typed twice, a short word
    ("How do I reset my router?", "Sorry to bother you, but how do I reset my router?"),
    # Chinese: IME slips of one sound, courtesy, punctuation and width
    ("怎么把照片备份到电脑", "怎么把照片备分到电脑"),
    ("周末去苏州玩两天怎么安排", "请问周末去苏州玩两天怎么安排？谢谢"),
    ("猫咪不吃东西怎么办", "猫咪不吃东西怎么办呢"),
    ("怎样才能睡得更好", "怎样才能睡的更好"),
    ("帮我查一下明早的航班", "帮我查明早的航班"),
    ("这个软件怎么更新版本", "这个软件怎么跟新版本"),
    # a character of another tone where a word breaks (the IME lists every tone together), a
    # character typed twice where the two make no word, a courtesy clause with its particles
    ("这次的会议推迟到几点", "这此的会议推迟到几点"),
    ("周末去哪里玩", "周末去哪离玩"),
    ("手机屏幕碎了怎么办", "手机屏幕幕碎了怎么办"),
    ("麻烦问一下，地铁几点停运", "地铁几点停运"),
    ("怎么把微信聊天记录导到新手机，谢谢你啦", "怎么把微信聊天记录导到新手机"),
    # the courtesy that opens a request
    ("Could you summarize this paragraph in two lines: the rain fell all day.",
     "Summarize this paragraph in two lines: the rain fell all day."),
    ("能不能帮我把这段话翻译成英文：明天见", "把这段话翻译成英文：明天见"),
    # the "+" of a name is kept, and a slip elsewhere is still one
    ("how do i compile a c++ progam", "How do I compile a C++ program?"),
    # stop 39: a string no list holds, one slip of the fingers from a word where a slip may fall:
    # the first two letters swapped, a short common word's letters swapped, a letter dropped
    # inside a word, a neighbouring key inside it; a name one keystroke off; an emoticon at the end
    ("What is the concentration of salt in sea water?", "What is the ocncentration of salt in sea water?"),
    ("How do I reset my router?", "Hwo do I reset my router?"),
    ("What is the capital of Peru?", "Waht is hte capital of Peru?"),
    ("What should I always say in an interview?", "What should I alwys say in an interview?"),
    ("Where is the nearest water fountain?", "Where is the nearest wster fountain?"),
    ("How can I download videos from Hotstar?", "How can I download videos from Hostar?"),
    ("Why does doing something I love feel surreal?", "Why does doing something I love feel surreal? (:"),
    # a rare word meant, misspelt as it sounds; words run together; a silent "e" added; a dash
    # between clauses is punctuation
    ("What is a Cartesian product?", "What is a Cartesion product?"),
    ("How do I set up Wi-Fi calling?", "how do i set up wifi calling"),
    ("What is the best approach to learn chess?", "What is the best approache to learn chess?"),
    ("上海——杭州，高铁要多久？", "上海-杭州高铁要多久"),
    ("Color or colour: which spelling is right?", "color or colour - which spelling is right"),
]

DIFFERENT = [
    # a number, a negation, an opposite, another real word, a name, a unit, a pronoun
    ("How do I cancel my gym membership?", "How do I cancel my gym memberships for 2 people?"),
    ("Book a table for 4", "Book a table for 5"),
    ("Can I freeze cooked rice?", "Can't I freeze cooked rice?"),
    ("How do I encrypt a zip file?", "How do I decrypt a zip file?"),
    ("How long should I boil an egg?", "How long should I broil an egg?"),
    ("Is it safe to eat raw kale?", "Is it safe to eat raw kelp?"),
    ("Convert 10 km to miles", "Convert 10 kg to miles"),
    ("What is the capital of Austria?", "What is the capital of Australia?"),
    ("怎么买二手车", "怎么卖二手车"),
    ("期中考试怎么复习", "期终考试怎么复习"),
    ("我能带充电宝上飞机吗", "我不能带充电宝上飞机吗"),
    ("和他说一声", "和她说一声"),
    ("去成都玩三天", "去成都玩四天"),
    ("公民的权利有哪些", "公民的权力有哪些"),
    # found by a review: a courtesy word as the subject, an article or a particle that matters,
    # a doubled character, two short real words, a tone that differs
    ("In Japanese, how do you say thank you?", "In Japanese, how do you say hello?"),
    ("Translate to French: thank you", "Translate to French: good morning"),
    ("谢谢用日语怎么说", "你好用日语怎么说"),
    ("hepatitis a vaccine schedule", "hepatitis vaccine schedule"),
    ("你要去吗", "你要去"),
    ("人人都要交税吗", "人都要交税吗"),
    ("how does a gan work", "how does a gun work"),
    ("best diner near the station", "best dinner near the station"),   # a letter twice, two words
    ("what is a statin", "what is a station"),
    ("股票怎么卖出", "股票怎么买出"),
    # the lexicon's opposite characters, a doubled numeral or a doubled word, a lone character
    # of another tone
    ("股价怎么涨了", "股价怎么跌了"),
    ("三三两两地走", "三两两地走"),
    ("天天跑步有好处吗", "天跑步有好处吗"),
    ("下周三是几号", "下下周三是几号"),                  # the week after next
    ("上个月的账单怎么查", "上上个月的账单怎么查"),
    ("和前任还能做朋友吗", "和前前任还能做朋友吗"),
    ("怎么买", "怎么卖"),
    ("帮我订一张去上海的票", "帮他订一张去上海的票"),
    ("Can you eat raw mushrooms?", "Eat raw mushrooms?"),          # "can you" also asks what anyone can do
    ("麻烦用英语怎么说", "用英语怎么说"),
    # a "+" or "#" glued to a word names another thing: a language, a grade, a plan, a tier
    ("How do I learn C++ fast?", "How do I learn C fast?"),
    ("C# or Java for a beginner?", "C or Java for a beginner?"),
    ("Is Disney+ worth it?", "Is Disney worth it?"),
    ("What does an A+ grade mean?", "What does an A grade mean?"),
    ("5+ years of experience in python", "5 years of experience in python"),
    # stop 39: a symbol is what is asked about; a currency; letters that are no slip of the
    # fingers (i for m); a rare word meant; two keystrokes that change how a word ends
    ("What does ~ mean in C++?", "What does % mean in C++?"),
    ("What is the difference between () and [] in Python?", "What is the difference between = and == in Python?"),
    ("Is $500 a month enough to live in Lisbon?", "Is €500 a month enough to live in Lisbon?"),
    ('Is "ain\'t" a word?', 'Is "amn\'t" a word?'),
    ("How do you convert ethane to ethylene?", "How do you convert ethene to ethylene?"),
    ("What are some examples of abstraction?", "What are some examples of abstractism?"),
    ("What is a mechanism?", "What is a mechanize?"),
    ("What is the form of this verb?", "What is the from of this verb?"),   # two common words
    ("What does x -= 1 do in Python?", "What does x += 1 do in Python?"),
    ("What is a -> b in Rust?", "What is a => b in Rust?"),
    # found by a review of stop 39's first version: names that begin with a letter more (the
    # families of f-, p-, r-, v- functions), a short word's last letter, rare words and acronyms
    # one key from a common word, a copy of a character that belongs to a word of its own, both
    # copies of a doubled one gone, words run together that are words apart too, symbols glued
    # to a word, underscores, a minus
    ("Why is gets dangerous in C?", "Why is fgets dangerous in C?"),
    ("How do I use open in Python?", "How do I use popen in Python?"),
    ("What does fork do in C?", "What does vfork do in C?"),
    ("What is argv in C?", "What is argc in C?"),
    ("Should I buy GPT stock?", "Should I buy got stock?"),
    ("Should I spay my cat?", "Should I spray my cat?"),
    ("What is an obit?", "What is an orbit?"),
    ("美国国会在哪里", "美国会在哪里"),
    ("两个个人账户可以合并吗", "两个人账户可以合并吗"),
    ("文件大小小于10MB怎么压缩", "文件大于10MB怎么压缩"),
    ("大学学什么好", "大学什么好"),                     # what to study at university / which one
    ("Is that that bad?", "Is bad?"),
    ("Is it a part of the plan?", "Is it apart of the plan?"),
    ("Who is the rapist in the film?", "Who is the therapist in the film?"),
    ("Why is x>0 true here?", "Why is x<0 true here?"),
    ("What does __str__ do in Python?", "What does str do in Python?"),
    ("What is 10 - 3?", "What is 10 3?"),
    ("What does deign mean?", "What does design mean?"),          # a rare word of the dictionary
    ("What is a ficus?", "What is a focus?"),
    ("How do I use print in Python?", "How do I use printf in Python?"),
    ("How do I restart docker?", "How do I restart dockerd?"),
    ("How do I use Canva?", "How do I use canvas?"),
    ("How do I get to the hotel from here?", "How do I get to he hotel from here?"),
]


# One word as British and American English spell it (breame's table), not two units.
SAME += [
    ("How can I practise my Spanish speaking?", "How can I practice my Spanish speaking?"),
    ("What colour should I paint a small bedroom?", "What color should I paint a small bedroom?"),
    ("Tips for travelling with a toddler", "Tips for traveling with a toddler"),
    ("How do I organise my kitchen cabinets?", "How do I organize my kitchen cabinets?"),
    ("What is the centre of a black hole like?", "What is the center of a black hole like?"),
    ("How do I cancel a programme on my TV box?", "How do I cancel a program on my TV box?"),
]
DIFFERENT += [
    ("How many kilograms are in a tonne?", "How many kilograms are in a ton?"),
    ("What is Prolog used for?", "What is prologue used for?"),
    ("How does a water filter work?", "How does a water philtre work?"),   # breame maps them
    ("What causes groin pain?", "What causes groyne pain?"),
    ("What is a draft?", "What is a draught?"),
    ("请问下周一银行上班吗", "周一银行上班吗"),           # 下周一 is next Monday, not 问下
    ("问下半年的理财收益怎么样", "半年的理财收益怎么样"),
    ("What is the best advice for a new manager?", "What is the best advise for a new manager?"),
    ("How do I practise my Spanish speaking?", "How do I improve my Spanish speaking?"),
]


# A 吗 closing a clause that a question word already makes a question (lexicon kind "asking"),
# and where it is the only thing that asks, or the word is a statement's (没什么, 什么都, 几乎).
SAME += [
    ("背单词有什么好方法吗，求指教", "背单词有什么好方法"),
    ("这个报错是什么意思吗", "这个报错是什么意思"),
    ("iPhone怎么截长图吗？", "iPhone怎么截长图"),
    ("成都有哪些好玩的地方吗", "成都有哪些好玩的地方"),
    ("一个月的房租一般多少吗", "一个月的房租一般多少"),
    ("有没有适合新手的吉他教程吗", "有没有适合新手的吉他教程"),
    ("为什么猫喜欢踩奶吗", "为什么猫喜欢踩奶"),
]
DIFFERENT += [
    ("明天他会来吗", "明天他会来"),
    ("我吃什么都可以吗", "我吃什么都可以"),
    ("这个没什么问题吗", "这个没什么问题"),
    ("这几乎不可能吗", "这几乎不可能"),
    ("他不怎么喝酒吗", "他不怎么喝酒"),
    ("这里多少有点贵吗", "这里多少有点贵"),
    ("你去哪儿都带着它吗", "你去哪儿都带着它"),
    ("怎么去机场，打车可以吗", "怎么去机场，打车可以"),
    ("这个药能和酒一起吃吗", "这个药能和酒一起吃"),
    # a review's: the statement's word a few characters off, or a negation anywhere in the clause
    ("这样做没有什么问题吗", "这样做没有什么问题"),
    ("这个药什么时候吃都可以吗", "这个药什么时候吃都可以"),
    ("不管怎么样你都会支持我吗", "不管怎么样你都会支持我"),
    ("无论如何都要去吗", "无论如何都要去"),
    ("你不觉得有什么不对吗", "你不觉得有什么不对"),
]


# A slip that joins its neighbour into a word across the meant word's boundary (加|索引 / 加锁|引)
# is a slip, of the very syllable and tone; two words in one place (期中考试 / 期终|考试) are not.
SAME += [
    ("两百万行，还没加索引", "两百万行，还没加锁引"),
    ("最近有什么好看的电视剧", "最近有神么好看的电视剧"),
    ("运动鞋和休闲鞋有什么区别", "运动谐和休闲鞋有什么区别"),
    ("联通流量加油包怎么开", "联通流量加邮包怎么开"),
]
DIFFERENT += [
    ("期中考试难吗", "期终考试难吗"),
    # a review's: both readings whole sentences (is it / the city is not; a game console)
    ("北京是不是中国的首都", "北京市不是中国的首都"),
    ("这个要不要吃", "这个药不要吃"),           # a review's: a lone character, same syllable and tone
    ("上海是不是很贵", "上海市不是很贵"),
    ("这个游戏几个人玩合适", "这个游戏机个人玩合适"),
    ("上海房价跌了吗", "上海防价涨了吗"),
    ("联通流量加油包怎么开", "联通流量加油包怎么关"),
]


# Another form of the same question (stop 47; examples written for this file, none from a pair
# set): a contraction spelt out, and the frame of a question (how do i / how can i / how does one
# / how to; 如何 / 怎样 / 怎么, 为啥 / 为什么).
SAME += [
    ("How can I make sourdough starter at home?", "How do I make sourdough starter at home?"),
    ("how to descale a kettle", "How do I descale a kettle?"),
    ("How does one become a sommelier?", "How can I become a sommelier?"),
    ("How do we split a bill fairly in a group?", "How can we split a bill fairly in a group?"),
    ("How can we we increase our savings rate?", "How can we increase our savings rate?"),   # a word typed twice
    ("What's the difference between a Roth and a traditional IRA?",
     "What is the difference between a Roth and a traditional IRA?"),
    ("My sourdough doesn't rise, what am I doing wrong?", "My sourdough does not rise, what am I doing wrong?"),
    ("whats the best time to visit iceland", "what is the best time to visit iceland"),
    ("I'm allergic to nuts, which cakes can I eat?", "I am allergic to nuts, which cakes can I eat?"),
    ("I cannot log in to my router", "I can't log in to my router"),
    ("微信如何开启朋友圈访问权限", "微信怎么开启朋友圈访问权限"),
    ("为啥空调不制冷了", "为什么空调不制冷了"),
    ("咋把聊天记录导到新手机", "怎么把聊天记录导到新手机"),
]
DIFFERENT += [
    # "you" is the assistant in a chat; a feeling or a look is no method
    ("How do you store my conversations?", "How do I store my conversations?"),
    ("How can you say that?", "How can I say that?"),
    ("How do you feel about remote work?", "How do I feel about remote work?"),
    ("How do I really feel about him?", "How can I really feel about him?"),
    ("How should I invest a bonus?", "How do I invest a bonus?"),                   # advice is no frame
    ("How do I learn to swim?", "Why do I learn to swim?"),
    # an article is never dropped: it picks the sense ("a will" / "will"), or is a letter or a note
    ("What is a will?", "What is will?"),
    ("What chords are in A minor?", "What chords are in minor?"),
    ("Which foods are high in vitamin A?", "Which foods are high in vitamin?"),
    ("I can log in to my router", "I can't log in to my router"),
    # a turn about words: the contraction or the frame is what is asked
    ("Is 'I'm' correct here?", "Is 'I am' correct here?"),
    ("what does can't mean in this sentence", "what does can not mean in this sentence"),
    # a second review's: a double negative, "im" spelt out beside "iam", code, a form or a title asked about
    ("it isn't not working", "it is not working"),
    ("you can't not vote in australia", "you can not vote in australia"),
    ("write an iam policy for s3", "write an im policy for s3"),
    ("why does `echo can't` hang in bash", "why does `echo can not` hang in bash"),
    ("is it ok to use don't in a formal essay", "is it ok to use do not in a formal essay"),
    ("who sang I'll Be There", "who sang I Will Be There"),
    ("make a sign that says do not enter", "make a sign that says don't enter"),
    # 怎么 before a negator asks why, 怎么了 what is wrong
    ("电脑如何不自动更新", "电脑怎么不自动更新"),
    ("我的订单怎样了", "我的订单怎么了"),
    ("他最近如何了", "他最近怎么了"),
    ("怎么去机场最快", "为什么去机场最快"),
    ("如何开启自动续费", "怎么关闭自动续费"),
    ("这款耳机怎么样", "这款耳机如何"),      # how good it is: a frame that ends the turn is not read
]


def test_another_form_is_named_and_allows_no_more_slips():
    found = near_exact(normalize_text("how can i reset my pasword"), normalize_text("how do i reset my password"))
    assert found is not None and found.edits[0] == "another form of the question"
    # three slips in nine typed tokens are too many, however long 咋 reads spelt out
    assert near_exact(normalize_text("咋跟新以经下在软件"), normalize_text("咋更新已经下载软件")) is None


@pytest.mark.parametrize("a, b", SAME)
def test_a_slip_or_a_courtesy_is_the_same_request(a, b):
    assert near_exact(normalize_text(a), normalize_text(b)) is not None
    assert near_exact(normalize_text(b), normalize_text(a)) is not None


@pytest.mark.parametrize("a, b", DIFFERENT)
def test_what_changes_meaning_is_never_a_slip(a, b):
    assert near_exact(normalize_text(a), normalize_text(b)) is None
    assert near_exact(normalize_text(b), normalize_text(a)) is None


def test_too_many_slips_are_not_one_request():
    assert near_exact("how to cancle my membresip", "how to cancel my membership") is not None
    assert near_exact("hwo to cancle my membresip", "how to cancel my membership") is None


def test_courtesy_goes_at_the_ends_and_inner_courtesy_anywhere():
    assert tokens("hi, please reset my password, thanks") == ("reset", "my", "password")
    assert tokens("请问帮我查一下快递") == tuple("帮我查快递")
    assert tokens("一下子就好了") == tuple("一下子就好了")        # 一下子 is "all at once"
    # Overlapping phrases go longest first from the left, whatever order the lexicon's set has
    # (it once depended on the hash seed): not "please tell me", leaving "could you" behind.
    assert tokens("could you please tell me how to reset my password") == tokens("how to reset my password")
    assert tokens("我想问一下请问怎么退款") == tuple("怎么退款")


def test_a_misspelt_turn_is_corrected_for_the_search_only():
    assert corrected("how do i chnage the email adress") == "how do i change the email address"
    assert corrected("how do i change the email address") is None
    assert corrected("how long to broil salmon") is None        # a real word, however rare


def test_a_typoed_repeat_is_served_without_the_verifier(cache):
    entry = remember(cache, [U("How do I change the email address on my account?")], "Settings > Account.")
    found = cache.lookup([U("How do I chnage the email adress on my acount?")], session="s1")
    assert found.zone is Zone.HIT and found.has_reason("near_exact_match") and found.entry.cache_id == entry
    assert found.scores.same is None and cache.stats().near_exact_hits == 1


def test_a_typo_in_the_history_is_a_repeat_but_another_answer_in_it_is_not(cache):
    entry = remember(cache, [U("我想学做蛋糕"), A("可以从戚风蛋糕开始。"), U("需要买什么工具")], "打蛋器、烤箱和模具。")
    again = cache.lookup([U("我想学作蛋糕"), A("可以从戚风蛋糕开始。"), U("需要买什么工具")], session="s1")
    assert again.zone is Zone.HIT and again.has_reason("near_exact_match") and again.entry.cache_id == entry
    other = cache.lookup([U("我想学做蛋糕"), A("可以从海绵蛋糕开始。"), U("需要买什么工具")], session="s1")
    assert not other.has_reason("near_exact_match")


@pytest.mark.parametrize("cached, probe", [
    ("这两个软件有什么区别", "这两个软件有什么曲别"),       # 曲别: the rules read 别 as "don't"
    ("翡翠怎么辨别真假", "翡翠怎么辩别真假"),
])
def test_a_slip_that_cuts_a_negator_out_of_its_word_is_still_a_repeat(cache, cached, probe):
    request = cache.prepare([U(probe)], session="s1").fingerprint.signature
    assert request.negations != cache.prepare([U(cached)], session="s1").fingerprint.signature.negations
    entry = remember(cache, [U(cached)], "answer")
    found = cache.lookup([U(probe)], session="s1")
    assert found.zone is Zone.HIT and found.has_reason("near_exact_match") and found.entry.cache_id == entry
    # A negator typed or dropped is never one: the rules' reading stands.
    assert not cache.lookup([U("别" + cached)], session="s1").has_reason("near_exact_match")


# A turn the cache reads as leaving the conversation's topic (another domain, unlike the history)
# was never served again but word for word: the switch dropped every entry of the session, and a
# slip or a word of the history can move it. The same conversation repeated keeps its entry.
_FLASK = [U("I'm building a REST API in Flask."), A("Cool. What do you need help with?")]
_FLASK_ZH = [U("我在用Flask写一个REST接口"), A("好的，需要什么帮助？")]


@pytest.mark.parametrize("history, cached, probe", [
    (_FLASK, "How do I get a refund for a late delivery?", "How do I get a refund for a late delivrey?"),
    (_FLASK_ZH, "快递一直不派送怎么投诉", "快递一直不派送怎么投述"),
    (_FLASK_ZH, "退货的运费由谁来出", "退货的运费由谁来出呢"),
])
def test_a_repeat_of_a_turn_that_switches_topic_is_served(cache, history, cached, probe):
    assert cache.prepare(history + [U(probe)], session="s1").fingerprint.topic_switch
    entry = remember(cache, history + [U(cached)], "answer")
    found = cache.lookup(history + [U(probe)], session="s1")
    assert found.zone is Zone.HIT and found.has_reason("near_exact_match") and found.entry.cache_id == entry


def test_a_topic_switch_still_drops_the_entries_of_another_history(cache):
    remember(cache, [U("我在学做川菜"), A("好的，想学哪道？"), U("快递一直不派送怎么投诉")], "answer")
    found = cache.lookup(_FLASK_ZH + [U("快递一直不派送怎么投诉")], session="s1")
    assert found.zone is Zone.MISS and found.has_reason("topic_switch") and found.has_reason("no_candidate")
    # With the same history, the semantic path weighs the entry (and refuses another request).
    remember(cache, _FLASK_ZH + [U("退货的运费由谁来出")], "answer")
    other = cache.lookup(_FLASK_ZH + [U("换货的运费由谁来出")], session="s1")
    assert other.zone is Zone.MISS and not other.has_reason("no_candidate") and other.has_reason("similar_not_same")


@pytest.mark.parametrize("cached, probe", [
    ("How do I encrypt a zip file?", "How do I decrypt a zip file?"),
    ("Book a table for 4 at 7pm", "Book a table for 5 at 7pm"),
    ("怎么买二手车", "怎么卖二手车"),
])
def test_minimal_pairs_never_take_the_near_exact_path(cache, cached, probe):
    remember(cache, [U(cached)], "answer")
    assert not cache.lookup([U(probe)], session="s1").has_reason("near_exact_match")


def test_scope_still_holds(cache):
    remember(cache, [U("How do I change the email address on my account?")], "Settings > Account.")
    assert cache.lookup([U("How do I chnage the email adress on my acount?")], session="s2").zone is Zone.MISS


def test_the_path_goes_with_the_exact_one(make_cache):
    cache = make_cache(exact_path=False)
    remember(cache, [U("How do I change the email address on my account?")], "Settings > Account.")
    assert not cache.lookup([U("How do I chnage the email adress on my acount?")], session="s1").has_reason(
        "near_exact_match")


def test_inner_courtesy_is_dropped_as_a_scan_of_every_phrase_drops_it():
    """``_drop_inner`` tries only the phrases that start with the token at hand: the same
    result as trying every phrase, longest first, at every place."""
    from smartcache.decide.near_exact import _courtesy, _drop_inner

    def every_phrase(out: list[str]) -> list[str]:
        k = 0
        while k < len(out):
            for phrase in _courtesy("courtesy_inner"):
                n = len(phrase)
                if tuple(out[k:k + n]) == phrase and not (k + n < len(out) and out[k + n] == "子"):
                    del out[k:k + n]
                    break
            else:
                k += 1
        return out

    phrases = _courtesy("courtesy_inner")
    pieces = sorted({t for p in phrases for t in p}) + ["how", "reset", "我", "退款", "子"]
    rng = random.Random(5)
    for _ in range(3000):
        out = [rng.choice(pieces) if rng.random() < 0.7 else t for p in rng.sample(phrases, 3) for t in p]
        if rng.random() < 0.3:
            rng.shuffle(out)
        assert _drop_inner(list(out)) == every_phrase(list(out))
