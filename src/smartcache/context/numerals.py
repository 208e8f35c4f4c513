"""Chinese numerals and magnitude suffixes to Arabic digits.

    >>> zh_to_int("八千")
    8000
    >>> zh_to_int("一万五")
    15000
    >>> convert_numerals("三天两晚，预算八千")
    '3天2晚，预算8000'
    >>> convert_numerals("1.5万元、5k")
    '15000元、5000'
    >>> convert_numerals("写得简洁一点"), convert_numerals("下午一点到三点")
    ('写得简洁一点', '下午1点到3点')

Only runs that are clearly numbers are converted: a run with a magnitude
character (十百千万亿), a digit run of three or more (years), or a single
numeral followed by a measure word. Idioms that contain numerals ("一下",
"一起", "万一", "千万别") are left alone, because converting them would make
unrelated sentences look like they share numbers.
"""

from __future__ import annotations

import re
from decimal import Decimal

_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4,
           "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_SMALL_UNITS = {"十": 10, "百": 100, "千": 1000}
_BIG_UNITS = {"万": 10_000, "亿": 100_000_000}
_NUMERAL_CHARS = "".join(_DIGITS) + "".join(_SMALL_UNITS) + "".join(_BIG_UNITS)

# Measure words after which a single numeral is a real count ("三天", "两家").
MEASURE_WORDS = (
    "小时", "分钟", "公里", "公斤", "千克", "厘米", "星期", "块钱", "美元", "欧元", "英镑", "日元",
    "天", "晚", "夜", "人", "位", "个", "家", "间", "张", "本", "次", "年", "月", "日", "号",
    "点", "秒", "岁", "元", "块", "斤", "克", "米", "周", "条", "份", "杯", "瓶", "台", "件",
    "种", "套", "层", "楼", "站", "倍", "折", "成", "遍", "部", "首", "篇", "封", "页", "行",
    "段", "句", "题", "道", "项", "步", "辆", "口", "门", "季", "期", "类", "名", "G", "g", "k", "K",
)

# Runs that read as numbers but are idioms; they are never converted.
_IDIOMS = ("万一", "千万", "一一", "一步", "一起", "一直", "一定", "一些", "一般", "一样", "一旦", "十分", "百分百", "一丝一毫", "三番五次", "一五一十",
           "乱七八糟", "七上八下", "三心二意", "一举两得", "独一无二", "一模一样")

_RUN = re.compile(f"[{_NUMERAL_CHARS}]+")
# "一点" is "a little" ("快一点", "一点都不") unless the words around it tell a time of day: a
# part of the day or a day before it ("下午一点", "明天一点"), or after it the half, the hour,
# a numeral, "past" or a range ("一点半", "一点钟", "一点十分", "一点多", "一点到三点"; not "快一点到").
# "一点五公里" (1.5) is read as before, 1点5: a decimal is not "a little" either.
_ONE_OCLOCK = re.compile(r"(?:上午|下午|中午|晚上|早上|凌晨|傍晚|夜里|半夜|深夜|午夜|今晚|明早|今天|明天|后天|昨天|每天|"
                         r"[号日在约于从至]|周[1-7一二三四五六日天])一点"
                         r"|一点(?:半|钟|整|多|一刻|三刻|过|\d|[零一二两三四五六七八九十]|[到至~-][零一二两三四五六七八九十\d]|"
                         r"以后|之后|以前|之前|左右|的(?:飞机|航班|火车|高铁|车|票|会议?|课|电影|场))")
# After these 一 picks a thing out, it counts nothing: 哪一年 (which year), 这一天, 那一次, 同一年 (the
# same year), 每一年 (every year), 某一天, 另一种, 任一, 唯一. An ordinal counts (第一年 / 第二年), and
# 这两年 or 每两年 still read as two.
_POINTS_AT_ONE = frozenset("哪这那同每某另任唯")
_WEEKDAY = re.compile(r"(星期|礼拜|周)([一二三四五六日天])")
_WEEKDAY_NUM = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "日": 7, "天": 7}
_PERCENT = re.compile(f"百分之([{_NUMERAL_CHARS}]+|\\d+(?:\\.\\d+)?)")
# Arabic number followed by a magnitude: "8千", "1.5万", "5k" (not "5kg", "5km").
# (?<!\d): linear time on a long digit run (see context.normalize).
_MAGNITUDE = re.compile(r"(?<!\d)(\d+(?:\.\d+)?)\s*(千|万|亿|[kK](?![a-zA-Z]))")
_MAGNITUDE_VALUE = {"千": 1_000, "万": 10_000, "亿": 100_000_000, "k": 1_000, "K": 1_000}


def zh_to_int(run: str) -> int:
    """Value of a run of Chinese numeral characters ("三千五" -> 3500, "二零二四" -> 2024)."""
    if not run or any(ch not in _NUMERAL_CHARS for ch in run):
        raise ValueError(f"not a Chinese numeral: {run!r}")
    if all(ch in _DIGITS for ch in run):
        return int("".join(str(_DIGITS[ch]) for ch in run))
    total, section, number = 0, 0, 0
    last_unit = 1
    for ch in run:
        if ch in _DIGITS:
            number = _DIGITS[ch]
        elif ch in _SMALL_UNITS:
            unit = _SMALL_UNITS[ch]
            section += (number or 1) * unit
            number, last_unit = 0, unit
        else:
            unit = _BIG_UNITS[ch]
            total = (total + section + number) * unit
            section, number, last_unit = 0, 0, unit
    if number and last_unit >= 10 and run[-1] in _DIGITS and run[-2] not in "零〇":
        # Colloquial trailing digit: "一万五" is 15000, "三千五" is 3500.
        number *= last_unit // 10
    return total + section + number


# Longer runs and numbers are identifiers or noise, not amounts: they are left as written.
# The caps also keep every value exact and printable: a run of 亿 multiplies by 10^8 per
# character, past what str() of an int may print (4300 digits), and a float rounds two
# different 20-digit numbers to the same one, which would make different requests look alike.
_MAX_RUN = 24
_MAX_NUMBER = 18            # characters of "\d+(.\d+)?"; times 10^8 stays within Decimal's 28 digits


def _scale(match: re.Match[str]) -> str:
    """"1.5万" -> "15000", "5k" -> "5000", exactly (Decimal, not float): "1.2345k" -> "1234.5"."""
    number, unit = match.group(1), match.group(2)
    if len(number) > _MAX_NUMBER:
        return match.group(0)
    value = Decimal(number) * _MAGNITUDE_VALUE[unit]
    return str(int(value)) if value == value.to_integral_value() else format(value.normalize(), "f")


def _percent(match: re.Match[str]) -> str:
    number = match.group(1)
    if number[0] not in _NUMERAL_CHARS:
        return number + "%"
    return (number if len(number) > _MAX_RUN else str(zh_to_int(number))) + "%"


def _convert_run(match: re.Match[str]) -> str:
    run = match.group(0)
    if len(run) > _MAX_RUN:
        return run
    text = match.string
    start, end = match.span()
    following = text[end:end + 2]
    # A two-character measure word settles it ("十分钟" is ten minutes, not "very").
    idiom_possible = not any(following.startswith(w) for w in MEASURE_WORDS if len(w) == 2)
    for idiom in _IDIOMS if idiom_possible else ():
        # An idiom that overlaps this run: leave the run as written.
        at = text.find(idiom, max(0, start - len(idiom) + 1), end + len(idiom) - 1)
        if at != -1 and at < end and at + len(idiom) > start:
            return run
    if run == "一" and following.startswith("点") and not _ONE_OCLOCK.search(text, max(0, start - 3), end + 4):
        return run      # "简洁一点", "一点也不辣": a little, not one o'clock
    if run == "一" and text[start - 1:start] in _POINTS_AT_ONE:
        return run      # "哪一年", "这一天", "同一年", "每一年": which, this, the same, every; no count
    has_unit = any(ch in _SMALL_UNITS or ch in _BIG_UNITS for ch in run)
    if len(run) >= 2 and has_unit:
        return str(zh_to_int(run))
    if len(run) >= 3 or ("零" in run or "〇" in run) and len(run) >= 2:
        return str(zh_to_int(run))
    if len(run) == 1 and following.startswith(MEASURE_WORDS):
        if run in _DIGITS:
            return str(_DIGITS[run])
        if run == "十":
            return "10"
    return run


def convert_numerals(text: str) -> str:
    """Rewrite Chinese numerals and magnitude suffixes as plain Arabic numbers."""
    text = _WEEKDAY.sub(lambda m: f"周{_WEEKDAY_NUM[m.group(2)]}", text)
    text = _PERCENT.sub(_percent, text)
    text = _RUN.sub(_convert_run, text)
    return _MAGNITUDE.sub(_scale, text)
