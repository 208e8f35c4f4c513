"""One canonical form per value: two phrasings of one amount, count, duration, date or time
of day give the same quantity, and two different values never do (property tests)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from smartcache.context import normalize_text
from smartcache.decide.evidence import _quantity
from smartcache.decide.swaps import _align_numbers
from smartcache.fingerprint import extract_entities

_DIGITS = "零一二三四五六七八九"
_EN = "zero one two three four five six seven eight nine ten eleven twelve".split()


def zh_numeral(n: int) -> str:
    """The forms people type: 3 -> 三, 12 -> 十二, 5000 -> 五千, 20000 -> 两万."""
    if n < 10:
        return "两" if n == 2 else _DIGITS[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return ("" if tens == 1 else _DIGITS[tens]) + "十" + (_DIGITS[ones] if ones else "")
    if n % 10000 == 0 and n < 100000:
        return ("两" if n == 20000 else _DIGITS[n // 10000]) + "万"
    if n < 10000 and n % 1000 == 0:
        return _DIGITS[n // 1000] + "千"
    return str(n)


def quantities(text: str) -> set[str]:
    keys = {e.key for e in extract_entities(normalize_text(text, lower=False))}
    return {v for v in map(_quantity, keys) if v is not None}


def aligned(a: str, b: str) -> tuple[set[str], set[str]]:
    ka = {e.key for e in extract_entities(normalize_text(a, lower=False))}
    kb = {e.key for e in extract_entities(normalize_text(b, lower=False))}
    return _align_numbers(ka, kb)


budgets = st.sampled_from([300, 800, 1000, 2000, 3000, 5000, 8000, 9000, 10000, 20000, 30000])


@settings(max_examples=60, deadline=None)
@given(budgets, st.integers(0, 5), st.integers(0, 5))
def test_one_budget_in_any_chinese_form_is_one_value(value, i, j):
    forms = [f"预算{value}元以内", f"预算不超过{value}块", f"预算{zh_numeral(value)}以内",
             f"预算{zh_numeral(value)}块钱以内", f"预算¥{value}", f"预算在{value}块左右"]
    a, b = forms[i], forms[j]
    assert quantities(a) == quantities(b) == {str(value)}
    mine, theirs = aligned(a, b)
    assert mine == theirs, (a, b)           # a bare budget and a priced one are one entity


@settings(max_examples=60, deadline=None)
@given(budgets, st.integers(0, 4), st.integers(0, 4))
def test_one_budget_in_any_english_form_is_one_value(value, i, j):
    forms = [f"a budget of ${value:,}", f"under {value} dollars", f"{value} USD at most", f"max ${value}",
             f"about {value} bucks"]
    assert quantities(forms[i]) == quantities(forms[j]) == {str(value)}


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 12), st.integers(0, 4), st.integers(0, 4))
def test_durations_and_counts_in_words_digits_and_chinese_agree(n, i, j):
    hours = [f"{n}小时", f"{zh_numeral(n)}个小时", f"{n} hours", f"{_EN[n]} hours", f"{n} hrs"]
    people = [f"{n}人", f"{zh_numeral(n)}个人", f"{n} people", f"{_EN[n]} people", f"{n} of us"]
    assert quantities(hours[i]) == quantities(hours[j]) == {f"{n}h"}
    assert quantities(people[i]) == quantities(people[j]) == {f"{n}people"}


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(1, 28), st.integers(0, 4), st.integers(0, 4))
def test_dates_in_chinese_and_english_agree(month, day, i, j):
    names = "jan feb mar apr may jun jul aug sep oct nov dec".split()
    full = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
            "October", "November", "December"]
    forms = [f"{month}月{day}日", f"{month}月{day}号", f"{names[month - 1].title()} {day}",
             f"{full[month - 1]} {day}th", f"{zh_numeral(month)}月{zh_numeral(day)}号"]
    assert quantities(forms[i]) == quantities(forms[j]) == {f"*-{month:02d}-{day:02d}"}


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 11), st.integers(0, 2), st.integers(0, 2))
def test_evening_times_agree(hour, i, j):
    forms = [f"{hour}pm", f"{hour + 12}:00", f"晚上{hour}点"]
    assert quantities(forms[i]) == quantities(forms[j]) == {f"{hour + 12:02d}:00"}


@settings(max_examples=60, deadline=None)
@given(budgets, budgets)
def test_different_values_never_agree(a, b):
    if a != b:
        assert quantities(f"预算{a}元以内") != quantities(f"预算{zh_numeral(b)}以内")
        assert quantities(f"under ${a}") != quantities(f"under {b} dollars")


def test_the_length_an_answer_is_asked_in_is_a_quantity_in_both_languages():
    # Same length, however phrased, and the same units as English.
    for a, b in (("请用一句话回答。", "一句话回答"), ("用一句话回答", "Answer in one sentence."),
                 ("写三段话介绍一下", "Write three paragraphs about it."), ("用两段文字描述", "用两段话描述")):
        assert quantities(a) == quantities(b) != set(), (a, b)
    # Another length is another value, even from one sentence ("1" is a constraint here).
    for a, b in (("请用一句话回答。", "请写三段话详细介绍。"), ("用两句话总结", "用一句话总结")):
        left, right = aligned(a, b)
        assert left != right and left and right, (a, b)
    # Not a length: a while, a politeness, an ordinal.
    for text in ("过一段时间再试", "我想问一句，退款多久到账", "第一句话是什么意思"):
        assert not {q for q in quantities(text) if q.endswith(("sentence", "paragraph"))}, text
