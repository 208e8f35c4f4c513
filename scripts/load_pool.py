"""The conversation material of scripts/load_test.py: a fixed pool of zh and en questions.

    questions()          every question a session may ask as new (expected: miss), built
                         from templates x slots, so neighbours differ by a city, a number or
                         a term (the vetoes get work, not only the encoder)
    paraphrase_pairs()   (original, paraphrase) candidates; the originals are in questions(),
                         and load_test.py keeps only the pairs that hit through the gateway
    follow_ups(q)        turns that change one condition of q (expected: half-hit)

Nothing here is random; load_test.py shuffles per session with a fixed seed.
"""

from __future__ import annotations

from itertools import product

SYSTEM = "You are a helpful assistant. Answer briefly."

CITIES_ZH = ("杭州", "苏州", "成都", "西安", "厦门", "青岛", "桂林", "昆明", "大连", "南京", "重庆", "长沙")
CITIES_EN = ("Lisbon", "Kyoto", "Prague", "Vienna", "Seville", "Porto", "Bergen", "Krakow", "Dublin", "Edinburgh",
             "Bruges", "Salzburg")

# (template, its slots, follow-ups that change a condition of it)
FAMILIES_ZH: tuple[tuple[str, dict[str, tuple[str, ...]], tuple[str, ...]], ...] = (
    ("周末去{city}玩{days}天，预算{budget}以内，帮我排个行程",
     {"city": CITIES_ZH, "days": ("两", "三", "四"), "budget": ("三千", "五千", "八千")},
     ("预算提高到一万", "改成五天", "改成4个人去")),
    ("{city}有哪些值得去的{thing}",
     {"city": CITIES_ZH, "thing": ("博物馆", "公园", "古镇", "夜市")}, ("只要免费的", "改成适合带小孩去的")),
    ("我买的{product}坏了，怎么申请售后维修",
     {"product": ("洗衣机", "冰箱", "空调", "电饭煲", "扫地机器人", "投影仪", "吹风机", "微波炉")},
     ("改成申请退货", "如果已经过了保修期呢")),
    ("用{lang}怎么{task}",
     {"lang": ("Python", "Java", "Go"), "task": ("读取一个CSV文件", "给列表排序", "发送HTTP请求", "解析JSON")},
     ("改用Rust写", "要求不用第三方库")),
)
FAMILIES_EN: tuple[tuple[str, dict[str, tuple[str, ...]], tuple[str, ...]], ...] = (
    ("Plan a {days}-day trip to {city} for {people} people with a budget of {budget} euros.",
     {"days": ("2", "3", "4"), "city": CITIES_EN, "people": ("2", "3"), "budget": ("1500", "3000")},
     ("Make it for 4 people instead.", "Raise the budget to 5000 euros.", "Make it 6 days instead.")),
    ("Which {thing} in {city} are worth visiting?",
     {"thing": ("museums", "parks", "markets", "churches"), "city": CITIES_EN},
     ("Only free ones, please.", "Make it suitable for small children instead.")),
    ("My {product} stopped working, how do I get it repaired under warranty?",
     {"product": ("washing machine", "fridge", "laptop", "headphones", "vacuum cleaner", "coffee machine",
                  "printer", "smartwatch")},
     ("What if I want a refund instead?", "What if the warranty has already expired?")),
    ("How do I {task} in {lang}?",
     {"task": ("read a CSV file", "sort a list", "send an HTTP request", "parse JSON"),
      "lang": ("Python", "Java", "Go")},
     ("Do it in Rust instead.", "Do it without third-party libraries instead.")),
)

# Candidates only: the verifier decides, and load_test.py checks each through the gateway first.
PAIRS_EN = ([(f"How do I reset my {x} password?", f"How can I reset my {x} password")
             for x in ("email", "bank account", "wifi", "router", "laptop", "phone")]
            + [(f"What does {t} mean?", f"what does '{t}' mean")
               for t in ("idempotent", "latency", "recursion", "polymorphism", "encapsulation", "memoization")]
            + [(f"How do I install {a} on ubuntu?", f"How can I install {a} on ubuntu")
               for a in ("docker", "nginx", "postgres", "git")])
PAIRS_ZH = ([(f"{t}是什么意思", f"{t}什么意思啊") for t in ("内卷", "躺平", "摆烂", "破防", "内耗", "凡尔赛")]
            + [(f"帮我写一封{x}邮件", f"帮我写一封{x}的邮件吧") for x in ("请假", "辞职", "感谢", "道歉", "邀请")]
            + [(f"{a}和{b}哪个更有营养", f"{b}和{a}哪个更有营养")
               for a, b in (("苹果", "香蕉"), ("牛奶", "豆浆"), ("鸡蛋", "牛肉"))]
            + [(f"周末去{c}玩三天，预算五千以内，帮我排个行程", f"周末去{c}玩3天，预算5000以内，帮我排一下行程")
               for c in ("杭州", "成都", "厦门")])


def _expand(families) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for template, slots, follows in families:
        names = list(slots)
        for values in product(*(slots[n] for n in names)):
            out.append((template.format(**dict(zip(names, values))), follows))
    return out


_QUESTIONS: dict[str, tuple[str, ...]] = dict(_expand(FAMILIES_ZH) + _expand(FAMILIES_EN))
for _a, _ in PAIRS_EN + PAIRS_ZH:
    _QUESTIONS.setdefault(_a, ())


def questions() -> list[str]:
    """Every question, in a fixed order (zh and en interleaved by family)."""
    return list(_QUESTIONS)


def paraphrase_pairs() -> list[tuple[str, str]]:
    return PAIRS_EN + PAIRS_ZH


def follow_ups(question: str) -> tuple[str, ...]:
    return _QUESTIONS.get(question, ())
