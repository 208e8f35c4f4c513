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
"""

from __future__ import annotations

import re

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("e-mail address", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    # Six digits or more in one run, or groups of digits joined by spaces or dashes (a phone, a card, an IBAN).
    ("phone or id number", re.compile(r"(?<!\d)(?:\d[ -]?){6,}\d(?!\d)|\b[A-Z]{2}\d{2}[A-Z0-9]{10,30}\b|"
                                      r"\d{17}[\dXx]")),
    ("own name", re.compile(r"\bmy name is\b|\bi am called\b|\bcall me [A-Z]|我叫|我的名字(?:是|叫)|本人(?:姓|叫)",
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
