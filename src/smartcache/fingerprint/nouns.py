"""Content nouns of a Chinese turn, by jieba's part-of-speech tagger.

Chinese has no spaces and no capitals, so products, couriers and people ("电饭煲",
"顺丰", "经理") are invisible to the suffix rules in ``entities``. The nouns let the
matcher see that "买了5天的电饭煲还能退货吗" and "运动手表签收5天了还可以退吗" are about
different things, however alike they read.

    >>> chinese_nouns("买了5天的电饭煲还能退货吗")
    ('电饭煲',)

jieba loads its dictionary (about a second) on first use, once per process.
"""

from __future__ import annotations

import logging
import re
import threading
from functools import lru_cache

_NOUN_TAGS = ("n", "nr", "ns", "nt", "nz", "nrt", "nrfg", "nw", "l")   # l: fixed phrases ("电动牙刷")
# Nouns that name a kind of thing rather than the thing: they never make a swap.
_GENERIC = frozenset("景点 酒店 宾馆 餐厅 地方 东西 问题 情况 事情 时间 时候 方法 办法 步骤 流程 材料 资料 证件 "
                     "办理 手续 订单 收货 地址 内容 文字 段落 上面 下面 这段 那段 项目 邮件 文章 功能 服务 "
                     "润色 通顺 总结 翻译 摘要 要点 改写 功课 语气 意思 代表".split())
# A kind named with a demonstrative ("那个景点") is a reference, not a subject.
_DEMONSTRATIVE = re.compile(r"(?:那|这|该)(?:个|家|座|间|款|所|种|段|封|份)?[\u4e00-\u9fff]{1,3}")
_lock = threading.Lock()
_tagger = None


def _posseg():
    global _tagger
    with _lock:
        if _tagger is None:
            import jieba
            import jieba.posseg

            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            _tagger = jieba.posseg
    return _tagger


def _has_cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


@lru_cache(maxsize=20_000)
def chinese_nouns(text: str) -> tuple[str, ...]:
    """The CJK nouns of ``text`` in order of appearance (empty for text with no Chinese)."""
    if not _has_cjk(text):
        return ()
    seen: dict[str, None] = {}
    for word, flag in _posseg().cut(_DEMONSTRATIVE.sub("，", text)):
        if flag in _NOUN_TAGS and len(word) >= 2 and _has_cjk(word) and word not in _GENERIC:
            seen.setdefault(word, None)
    return tuple(seen)

