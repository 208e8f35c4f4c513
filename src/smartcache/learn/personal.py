"""Personal data in a request or an answer: what must never reach the tenant's global pool.

An answer proven the same across sessions may be shared with every user of the tenant,
unless the request or the answer holds something of one person: an e-mail address, a phone
number, an account or id number (a run of six digits or more), a name introduced as one's
own, or a street address. The patterns lean towards finding too much: a wrongly kept-back
answer costs a few misses, a shared personal answer costs a user's privacy.

    >>> personal_data("How do I reset my password?") is None
    True
    >>> personal_data("Send it to jane.doe@example.com please")
    'e-mail address'
    >>> personal_data("我的手机号是13812345678"), personal_data("My account number is 4401 2231 9981")
    ('phone or id number', 'phone or id number')
    >>> personal_data("Hi, my name is Priya and I need help"), personal_data("我叫王小明")
    ('own name', 'own name')
    >>> personal_data("How many days are in 2024?") is None, personal_data("Explain HTTP 404 and 500") is None
    (True, True)

A request about the user's own records (an order, a balance, a booking) or about what the
user said before is answered from data the request does not hold: the same words from
another person ask about another person's records.

    >>> personal_data("Where is my order? It should have arrived Tuesday"), personal_data("我的快递单号是多少来着")
    ("one's own records", "one's own records")
    >>> personal_data("do you remember my name?"), personal_data("我上次跟你说的地址是哪个")
    ('what the user said before', 'what the user said before')
    >>> personal_data("what breed is my dog?"), personal_data("我家无线网的名字是啥")
    ("the user's own facts", "the user's own facts")
    >>> personal_data("What breed of dog is best for apartments?") is None, personal_data("猫为什么怕水") is None
    (True, True)
    >>> personal_data("How do I cancel my order?") is None, personal_data("退款一般多久到账") is None
    (True, True)

A name with a surname, part of a card number, an id given with its marker, or an answer that
rests on what the user said about themselves:

    >>> personal_data("Hi, I'm Priya Nair, my card ends in 4821."), personal_data("I see order #48213")
    ('own name', 'card, order or booking number')
    >>> personal_data("尾号4821的卡被扣了两次"), personal_data("Based on my goals, how many calories a day?")
    ('card, order or booking number', "the user's own facts")
    >>> personal_data("I'm new here, how do I post?") is None, personal_data("What does error 4821 mean?") is None
    (True, True)
"""

from __future__ import annotations

import re

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Starting only where a run of address characters starts: a long run is scanned once, not once a character.
    ("e-mail address", re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    # Six digits or more in one run, or groups of digits joined by spaces or dashes (a phone, a card, an IBAN).
    ("phone or id number", re.compile(r"(?<!\d)(?:\d[ -]?){6,}\d(?!\d)|\b[A-Z]{2}\d{2}[A-Z0-9]{10,30}\b|"
                                      r"\d{17}[\dXx]")),
    ("own name", re.compile(r"\bmy name(?: is|'s|’s)\b|\bi am called\b|\bcall me [A-Z]|我叫|我的名字(?:是|叫)|"
                            r"本人(?:姓|叫)", re.I)),
    # A first and a last name after "I'm", closing its clause ("Hi, I'm Priya Nair, my card …");
    # as sent, so the capitals tell a name from "I'm new here" or "I'm Italian", and the clause's
    # end from a title ("I'm Feeling Lucky" on the Google home page).
    ("own name", re.compile(r"\b(?:I'm|I’m|I am)\s+[A-Z][a-z]+\s+[A-Z][a-z]+"
                            r"(?=\s*(?:[,.;:!(—\n-]|$|\b(?:and|from|here|with|calling|speaking)\b))")),
    # Part of a card or an account number ("my card ends in 4821", 尾号4821), or an id given with
    # its marker ("order #48213", "booking reference AB1234", 订单号 20231104): one customer's. A
    # card's ending needs a card or an account before it ("support ends in 2025" is no card). No
    # two unbounded runs of one class sit side by side: long blank runs stay linear.
    ("card, order or booking number", re.compile(
        r"\b(?:card|account|acct|visa|mastercard|amex|debit|credit)\b[^.?!]{0,25}?"
        r"\b(?:(?:ends?|ending)(?: in| with)?|last (?:four|4)(?: digits)?(?: (?:is|are))?)\s*:?[*x•\s-]{0,20}\d{4}\b|"
        r"\blast (?:four|4) digits of (?:my|the|your) (?:card|account)\b[^.?!]{0,15}?\d{4}\b|"
        r"\b(?:order|booking|reservation|ticket|case|claim|tracking|confirmation|reference|ref|invoice|policy|"
        r"member(?:ship)?|customer)\s*(?:number|no\.?|#|id|code|reference|ref)(?:\s*[:：#])*\s*[a-z0-9-]*\d{4,}|"
        r"\b(?:order|booking|invoice|ticket)\s*#\s*[a-z0-9-]*\d{3,}|"
        r"尾(?:号|数)(?:是|为)?\s*\d{3,4}|(?:后|末)(?:四|4)位(?:是|为)?\s*\d{4}|"
        r"(?:订单|运单|快递单|工单|预约|保单|会员|航班|票)(?:编)?号(?:\s*[:：])?\s*[a-z0-9-]*\d{4,}",
        re.I)),
    # An answer that rests on what this user said about themselves ("based on my goals", 根据我的情况).
    ("the user's own facts", re.compile(
        r"\b(?:based on|given|according to|considering) my (?:[\w-]+ ){0,2}(?:goals?|situation|profile|numbers|"
        r"stats|data|results|history|info|information|details|budget|income|symptoms|measurements|weight|"
        r"height|age|needs|schedule|plan|preferences|circumstances)\b|\bbased on what i (?:told|said|gave)\b|"
        r"(?:根据|结合|针对|按照?)我的(?:情况|条件|信息|资料|需求|预算|数据|身高|体重)|根据我(?:之前|刚才)(?:说|提供|告诉)",
        re.I)),
    # Asking about one's own records rather than how something works: "where is my order",
    # "what's the balance on my checking account", 帮我查下储蓄卡余额, 我的订单怎么还没发货.
    # Not "how do I cancel my order" nor "when will my refund arrive", which every customer
    # asks alike and a store's policy answers.
    ("one's own records", re.compile(
        r"(?:\b(?:where|what|what's|which|how much|why|tell me|look up|find)\b[^.?!;]{0,30}?|"
        r"\b(?:is|are|has|hasn't|have|did)\s+)\bmy (?:[\w-]+ ){0,2}"
        r"(?:orders?|account|balance|booking|reservation|flight|appointment|claim|refund|package|parcel|"
        r"delivery|shipment|bill|invoice|subscription|plan|card|policy|ticket|application|points|salary|grades?)\b|"
        r"\b(?:how much|how many|when|what|where) (?:did|have) i (?:spend|spent|pay|paid|buy|bought|order|ordered|"
        r"use|used|earn|earned)\b|我(?:上个月|这个月|本月|昨天|上周|今年)?(?:花了|消费了|用了|买了)多少|"
        r"(?:(?:帮我|给我|我想)(?:查|看)(?:一下|一查|下)?|(?<!怎么)(?<!如何)(?<!怎么查)(?<!如何查)(?:查|看)(?:一下|一查|下)?我的?)"
        r"[^，。？！,.?!]{0,6}(?:订单|账户|帐户|余额|快递|包裹|流量|话费|积分|账单|保单|理赔|预约|航班)|"
        r"我的?[^，。？！,.?!]{0,6}(?:订单|账户|帐户|快递|包裹|退款|航班|预约|理赔|保单|单号|订单号|航班号)"
        r"[^，。？！,.?!]{0,8}(?:多少|什么时候|怎么还没|到哪|批下来|有没有|没有|是啥|是什么|是哪|几号)",
        re.I)),
    # Recalling what the user said before: its answer is in that user's conversation alone.
    ("what the user said before", re.compile(
        r"\b(?:did i (?:tell|say|give|mention)|do you remember|remind me\b[^.?!]{0,20}\b(?:i|my)|what did i (?:tell|say)|"
        r"where did i (?:tell|say)|when did i (?:tell|say)|which \w+ (?:number )?did i give)\b|"
        r"还记得|我[^，。？！,.?!]{0,10}来着|我上次(?:跟|和|让|说|问|告诉)|我(?:跟|和)你说过|我之前(?:说|告诉|提)",
        re.I)),
    # A fact of the user's own household that only the user can have told: "what breed is my
    # dog", "how old is my son", 我家无线网的名字是啥, 我家猫叫啥.
    ("the user's own facts", re.compile(
        r"\b(?:what|which|where|when|how old)\b[^.?!;]{0,20}\b(?:is|are|was) my (?:[\w-]+ )?"
        r"(?:dog|cat|pet|son|daughter|kids?|children|wife|husband|partner|mom|mum|dad|wi-?fi|router|password)\b|"
        r"我(?:家|的)?(?:[^，。？！,.?!]{0,3})(?:猫|狗|儿子|女儿|孩子|老婆|老公|无线网|wifi|密码)[^，。？！,.?!]{0,6}"
        r"(?:叫|是)(?:啥|什么|哪|多少)", re.I)),
    # An assistant told it can read the user's own data answers from that data.
    ("the user's own data", re.compile(
        r"access to the user'?s|the user'?s (?:linked|own) |the logged[- ]in user|当前登录用户|用户的私人",
        re.I)),
    ("street address", re.compile(r"\b\d+\s+\w+(?:\s\w+)?\s(?:street|st|avenue|ave|road|rd|lane|ln|boulevard|blvd)\b|"
                                  r"\bmy address\b|[路街道巷弄]\d+号|我(?:家|的)?地址", re.I)),
)


def personal_data(text: str) -> str | None:
    """What of one person ``text`` holds (a short name for people), or None."""
    for what, pattern in _PATTERNS:
        if pattern.search(text):
            return what
    return None


__all__ = ["personal_data"]
