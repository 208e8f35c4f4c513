"""The lean semantic path (issue 29): the verifier's complete-tree walk against a node-by-node
reference, and the memoised evidence against the same evidence read cold."""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from pathlib import Path

import numpy as np
import pytest

from smartcache.decide import side as side_module
from smartcache.decide import swaps, tokens
from smartcache.decide.evidence import FEATURES, gather
from smartcache.decide.verifier import COMPLETE_DEPTH, TreeVerifier
from smartcache.eval import load_cases
from smartcache.fingerprint.fingerprint import turn_facts
from conftest import remember

DEVSETS = Path(__file__).resolve().parent.parent / "docs" / "eval" / "devset"


def reference_predict(model: TreeVerifier, x: np.ndarray) -> np.ndarray:
    """The ensemble read the slow, obvious way: one Python walk per sample and tree."""
    x = np.asarray(x, np.float32)
    out = np.empty((x.shape[0], 3))
    for i, row in enumerate(x):
        raw = model.baseline.astype(np.float64).copy()
        for t in range(model.feature.shape[0]):
            node = 0
            while not model.leaf[t, node]:
                go_left = row[model.feature[t, node]] <= model.threshold[t, node]
                node = model.left[t, node] if go_left else model.right[t, node]
            raw[t % 3] += model.value[t, node]
        p = np.exp(raw - raw.max())
        out[i] = p / p.sum()
    return out


def boundary_rows(model: TreeVerifier, rng: np.random.Generator, n: int) -> np.ndarray:
    """Rows whose values sit on the model's own thresholds, a float32 step either side of them,
    or are NaN / infinite: where a walk that compares differently would part from the reference."""
    x = rng.random((n, len(model.features))).astype(np.float32)
    inner = ~model.leaf
    for i in range(n):
        for f in range(x.shape[1]):
            cuts = model.threshold[inner & (model.feature == f)]
            if len(cuts) and rng.random() < 0.7:
                cut = np.float32(rng.choice(cuts))
                x[i, f] = rng.choice([cut, np.nextafter(cut, np.float32(np.inf)), np.nextafter(cut, np.float32(-np.inf))])
    x[rng.random(x.shape) < 0.02] = np.nan
    x[rng.random(x.shape) < 0.01] = np.inf
    x[rng.random(x.shape) < 0.01] = -np.inf
    return x


def real_rows(cache_factory, names=("en-a", "zh-a", "history-a"), per_set: int = 40) -> np.ndarray:
    """The evidence the decider gathers on the dev sets' cases: every cached item against its probe."""
    rows = []
    for name in names:
        for case in load_cases(DEVSETS / f"{name}.jsonl")[:per_set]:
            cache = cache_factory()
            fp, _ = cache.fingerprint(case.probe)
            for item in case.cached:
                stored = cache.store(item.messages, item.answer, session="s1")
                if stored.stored:       # not a time-sensitive or high-risk request
                    entry = cache.get(stored.cache_id)
                    rows.append(gather(fp, entry, float(fp.turn_vector @ entry.turn_vector)).features)
    return np.stack(rows)


@pytest.fixture(scope="module")
def packaged():
    return TreeVerifier.load(features=FEATURES)


def test_the_complete_walk_equals_the_node_by_node_reference_on_random_rows(packaged):
    rng = np.random.default_rng(29)
    x = np.concatenate([rng.random((300, len(FEATURES))).astype(np.float32) * 3 - 1,
                        rng.integers(0, 4, (200, len(FEATURES))).astype(np.float32),
                        boundary_rows(packaged, rng, 300)])
    ours, reference = packaged.predict(x), reference_predict(packaged, x)
    assert np.abs(ours - reference).max() < 1e-9
    # The sums are taken in the same order as before: not close, the same bits.
    raw = np.tile(packaged.baseline, (len(x), 1)) + packaged._walk(x)
    before = np.exp(raw - raw.max(axis=1, keepdims=True))
    assert np.array_equal(ours, before / before.sum(axis=1, keepdims=True))


def test_the_complete_walk_equals_the_reference_on_the_dev_sets_evidence(packaged, make_cache):
    x = real_rows(make_cache)
    assert len(x) >= 100
    assert np.abs(packaged.predict(x) - reference_predict(packaged, x)).max() < 1e-9
    for n in (1, 2, 4):         # the decider's batch sizes: one row alone is walked as in a batch
        assert np.array_equal(packaged.predict(x[:n]), packaged.predict(x)[:n])


def chain_model(depth: int, features: int = 3) -> TreeVerifier:
    """Three trees (one a class) that are chains ``depth`` deep: each split's right child a leaf."""
    trees = []
    for c in range(3):
        feature, threshold, left, right, value, leaf = [], [], [], [], [], []
        for level in range(depth):
            here = len(feature)
            feature += [level % features, 0]
            threshold += [0.1 * (level + 1) + 0.01 * c, 0.0]
            left += [here + 2, 0]
            right += [here + 1, 0]
            value += [0.0, 0.3 * level - c]
            leaf += [0, 1]
        feature.append(0), threshold.append(0.0), left.append(0), right.append(0), value.append(1.5), leaf.append(1)
        trees.append({"feature": feature, "threshold": threshold, "left": left, "right": right,
                      "value": value, "leaf": leaf})
    return TreeVerifier.from_json({"format": "smartcache-verifier/1", "classes": ["same", "modify", "different"],
                                   "features": [f"f{i}" for i in range(features)], "baseline": [0.0, 0.1, -0.1],
                                   "trees": trees})


@pytest.mark.parametrize("depth", [1, 5, COMPLETE_DEPTH, COMPLETE_DEPTH + 3])
def test_shallow_and_deep_models_walk_as_the_reference(depth):
    model = chain_model(depth)
    assert model.depth == depth
    rng = np.random.default_rng(depth)
    x = (rng.random((200, 3)) * depth * 0.12).astype(np.float32)
    x[::17, 1] = np.nan
    assert np.abs(model.predict(x) - reference_predict(model, x)).max() < 1e-9


def test_the_memoised_diff_is_sequence_matchers():
    """The diff is cydifflib's (difflib compiled): it must say exactly what the standard
    library says, on short and long sequences, few symbols (many ties) and many."""
    rng = np.random.default_rng(3)
    for i in range(2000):
        alphabet = list("abcde" if i % 2 else "abcdefghij周末去杭州玩天")
        a = tuple(rng.choice(alphabet, rng.integers(0, 9 if i < 1000 else 60)))
        b = list(a) if i % 3 else list(rng.choice(alphabet, rng.integers(0, 9)))
        for _ in range(rng.integers(0, 5)):      # a few edits of a copy: long shared runs
            if b:
                b[rng.integers(len(b))] = rng.choice(alphabet)
        b = tuple(b)
        m = difflib.SequenceMatcher(None, a, b, autojunk=False)
        found = tokens.diff(a, b)
        assert list(found.opcodes) == m.get_opcodes() and list(found.blocks) == m.get_matching_blocks()
        assert tokens.diff("".join(a), "".join(b)).opcodes == found.opcodes


def test_the_common_share_is_the_blocks_weight_summed_slice_by_slice():
    """``_common_share`` from memoised running sums against the sum over each block's slice,
    with synonym placeholders (weight 2) among the tokens."""
    def weight(ts):
        return sum(2 if "\ue000" <= t <= "\uf8ff" else 1 for t in ts)
    rng = np.random.default_rng(5)
    alphabet = list("abcdef") + ["\ue000", "\ue003", "\uf8ff", "how", "\ue0ff"]
    for _ in range(1000):
        a = tuple(rng.choice(alphabet, rng.integers(0, 12)))
        b = tuple(rng.choice(alphabet, rng.integers(0, 12)))
        blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
        expected = sum(weight(a[m.a:m.a + m.size]) for m in blocks) / max(weight(a), weight(b), 1)
        assert tokens._common_share(a, b) == expected
        assert tokens._common_share(list(a), list(b)) == expected


def test_requests_read_on_many_threads_read_as_one_by_one(make_cache):
    """Many lookups at once (the gateway's threads on a store that waits) must read each
    request as it is read alone: jieba, the memos and the encoder are shared."""
    from concurrent.futures import ThreadPoolExecutor
    cache = make_cache(memo_size=0)     # USE pads a batch: a text's vector moves a little with its batch-mates
    probes = [case.probe for name in ("zh-a", "en-a", "history-a") for case in load_cases(DEVSETS / f"{name}.jsonl")[:24]]
    alone = [cache.fingerprint(p)[0] for p in probes]
    turn_facts.cache_clear()
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda p: cache.fingerprint(p)[0], probes))
    for a, b in zip(alone, together):
        assert a.signature == b.signature and a.topic_switch == b.topic_switch and a.time_sensitive == b.time_sensitive
        assert np.allclose(a.turn_vector, b.turn_vector, atol=1e-6)


def roles_swapped_reference(a: str, b: str, nouns: tuple[str, ...]) -> tuple[str, str] | None:
    """``_roles_swapped`` as it was before its early exit and compiled patterns."""
    a, b = a.lower(), b.lower()
    words = set(nouns) | (set(swaps._ENGLISH_WORD.findall(a)) & set(swaps._ENGLISH_WORD.findall(b)))
    words -= swaps._FILLER | swaps._QUESTION_WORDS
    both = sorted(w for w in words if w in a and w in b)
    if len(both) < 2 or len(both) > 12:
        return None
    ta, tb = tokens._tokens(a), tokens._tokens(b)
    if len(set(ta) & set(tb)) < 0.5 * max(len(set(ta)), len(set(tb))):
        return None
    base = tokens._common_share(ta, tb)
    for i, x in enumerate(both):
        for y in both[i + 1:]:
            if x in y or y in x:
                continue
            if any(re.search(f"{re.escape(p)}{swaps._CONJOINED}{re.escape(q)}", t)
                   for p, q in ((x, y), (y, x)) for t in (a, b)):
                continue
            pattern = (lambda w: rf"\b{re.escape(w)}\b" if w.isascii() else re.escape(w))
            exchanged = re.sub(f"{pattern(x)}|{pattern(y)}", lambda m: y if m.group(0) == x else x, a)
            share = tokens._common_share(tokens._tokens(exchanged), tb)
            if share >= 0.85 and share >= base + 0.1:
                return x, y
    return None


@pytest.mark.parametrize("a, b, nouns", [
    ("男生说女生可爱", "女生说男生可爱", ("男生", "女生")),
    ("what do indians find annoying in foreigners", "what do foreigners find annoying in indians", ()),
    ("苹果和香蕉哪个好", "香蕉和苹果哪个好", ("苹果", "香蕉")),
    ("小明借了小红的书", "小明借了小红的书吗", ("小明", "小红")),
    ("how do i move files from drive to dropbox", "how do i move files from dropbox to drive", ()),
    ("teacher thanks student", "student thanks teacher", ()),
])
def test_roles_swapped_is_unchanged(a, b, nouns):
    assert swaps._roles_swapped(a, b, nouns) == roles_swapped_reference(a, b, nouns)


def test_roles_swapped_is_unchanged_on_the_dev_sets():
    seen = 0
    for name in ("en-a", "zh-a", "shapes-a"):
        for case in load_cases(DEVSETS / f"{name}.jsonl"):
            probe = case.probe[-1]["content"].lower()
            for item in case.cached:
                cached = item.messages[-1]["content"].lower()
                nouns = tuple(w for w in re.findall(r"[\u4e00-\u9fff]{2,3}", cached + probe)[:6])
                assert swaps._roles_swapped(cached, probe, nouns) == roles_swapped_reference(cached, probe, nouns)
                seen += 1
    assert seen > 300


def evidence_key(found) -> tuple:
    return (found.features.tobytes(), tuple(map(str, found.signals)), str(found.veto), found.veto_zone)


def clear_memos() -> None:
    for memo in (side_module._memoised, side_module._memoised_long, tokens.diff, tokens._tokens,
                 tokens._running_weight):
        memo.cache_clear()


def test_evidence_read_warm_is_the_evidence_read_cold(make_cache):
    cases = load_cases(DEVSETS / "shapes-a.jsonl")[:30]
    for case in cases:
        cache = make_cache()
        fp, _ = cache.fingerprint(case.probe)
        stored = [cache.store(item.messages, item.answer, session="s1") for item in case.cached]
        entries = [cache.get(s.cache_id) for s in stored if s.stored]
        clear_memos()
        cold = [evidence_key(gather(fp, e, float(fp.turn_vector @ e.turn_vector))) for e in entries]
        warm = [evidence_key(gather(fp, e, float(fp.turn_vector @ e.turn_vector))) for e in entries]
        assert cold == warm


def test_the_request_and_each_entry_are_read_once(make_cache):
    cache = make_cache()
    messages = [[{"role": "user", "content": t}] for t in (
        "How do I reset my password?", "How can I reset my password", "How do I change my password?",
        "Where is my order 48213?")]
    entries = [cache.get(remember(cache, m, f"answer {i}")) for i, m in enumerate(messages)]
    fp, _ = cache.fingerprint([{"role": "user", "content": "how to reset my password"}])
    side_module._memoised.cache_clear()
    for e in entries:
        gather(fp, e, 0.9)
    assert side_module._memoised.cache_info().misses == len(entries) + 1       # each entry, and the request once
    for e in entries:
        gather(fp, e, 0.9)
    assert side_module._memoised.cache_info().misses == len(entries) + 1       # nothing read again


def test_a_long_request_is_read_once_a_lookup_and_not_kept_for_long(make_cache):
    cache = make_cache()
    entries = [cache.get(remember(cache, [{"role": "user", "content": f"How do I reset the password of account {i}?"}],
                                  f"answer {i}")) for i in range(3)]
    long_turn = "how do i reset my password " + " ".join(f"detail {i} of my setup" for i in range(40))
    fp, _ = cache.fingerprint([{"role": "user", "content": long_turn}])
    assert len(fp.signature.text) > side_module.MEMO_CHARS
    side_module._memoised_long.cache_clear()
    cold = [evidence_key(gather(fp, e, 0.9)) for e in entries]
    assert side_module._memoised_long.cache_info().misses == 1
    assert cold == [evidence_key(gather(fp, e, 0.9)) for e in entries]
    assert side_module._memoised_long.cache_info().maxsize == side_module.LONG_SIZE


def test_an_entry_whose_signature_changes_is_read_anew(make_cache):
    cache = make_cache()
    first = cache.get(remember(cache, [{"role": "user", "content": "开启 A 功能"}], "a"))
    other = cache.get(remember(cache, [{"role": "user", "content": "关闭 A 功能"}], "b"))
    fp, _ = cache.fingerprint([{"role": "user", "content": "开启 A 功能"}])
    before = gather(fp, first, 1.0)
    # The same id with another signature (an entry rewritten in place) is judged on its new text.
    rewritten = dataclasses.replace(first, signature=other.signature)
    after = gather(fp, rewritten, 1.0)
    expected = gather(fp, dataclasses.replace(other, cache_id=first.cache_id), 1.0)
    assert evidence_key(after) == evidence_key(expected) != evidence_key(before)


def test_the_recorded_decisions_compare_equal(tmp_path):
    """``scripts/compare_decisions.py compare``: equal records pass, a changed zone is reported."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    record = {"cases": "x", "competing": None, "systems": {"smartcache": [
        {"id": "c1", "zone": "hit", "answer": "a", "entry": "c1/0", "reasons": ["semantic_match [c1/0]: p"],
         "scores": [0.9, 1.0, 0.95], "evidence": []}]}}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(record))
    b.write_text(json.dumps(record))
    script = [sys.executable, str(root / "scripts" / "compare_decisions.py"), "compare", str(a), str(b)]
    assert subprocess.run(script, capture_output=True, text=True).returncode == 0
    record["systems"]["smartcache"][0]["zone"] = "miss"
    b.write_text(json.dumps(record))
    done = subprocess.run(script, capture_output=True, text=True)
    assert done.returncode == 1 and "c1: zone hit -> miss" in done.stdout


def test_joined_words_are_found_as_the_search_finds_them():
    rng = np.random.default_rng(11)
    pieces = ["a", "an", "and", "or", "of", "cat", "dog", "s", " ", "  ", ",", "，", "和", "的", "哪个", "那家",
              "苹果", "香蕉", "'s", "&", "/", "、", "x"]
    words = ["cat", "dog", "a", "苹果", "香蕉", "cats", "s", "of", "和"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces, rng.integers(1, 9)))
        x, y = rng.choice(words, 2)
        expected = re.search(f"{re.escape(x)}{swaps._CONJOINED}{re.escape(y)}", text) is not None
        assert swaps._joined(text, x, y) == expected, (text, x, y)


def dev_texts() -> set[str]:
    """Every message of the dev sets' -a files, as written and normalised."""
    from smartcache.context import normalize_text
    texts = set()
    for path in sorted(DEVSETS.glob("*-a.jsonl")):
        for case in load_cases(path):
            for messages in [case.probe, *(item.messages for item in case.cached)]:
                for m in messages:
                    content = m["content"] if isinstance(m["content"], str) else ""
                    texts.update((content, normalize_text(content)))
    return texts


def test_the_one_scan_prechecks_read_as_every_pattern_reads():
    """``action_sides`` and ``task_actions`` first ask one pattern whether any side or action is
    named at all: on every dev-set message the result is what the full scan gives."""
    from smartcache.fingerprint import tags

    def sides(text: str) -> tuple[int, ...]:
        out = []
        for first, second in tags.ANTONYMS:
            has_second, has_first = bool(second.search(text)), bool(first.search(second.sub(" ", text)))
            out.append(1 if has_first and not has_second else -1 if has_second and not has_first else 0)
        return tuple(out)

    def actions(text: str) -> tuple[str, ...]:
        text = tags.instruction_part(text)
        return tuple(sorted(name for name, pattern in tags._ACTIONS.items() if pattern.search(text)))

    texts = dev_texts()
    assert len(texts) > 3000
    named = 0
    for text in texts:
        assert tags.action_sides(text) == sides(text), text
        assert tags.task_actions(text) == actions(text), text
        named += any(sides(text))
    assert named > 300          # the sets do name sides: the precheck is exercised both ways


def test_contradictions_read_the_requests_dates_only_when_the_answer_names_one():
    """``contradictions`` skips the turns' dates when the answer names none: the same problems as
    the full reading, on dev-set turns against answers with and without dates, money, lists and days."""
    from smartcache.decide.validate import check_answer, constraints_of, contradictions

    answers = ["总计约6200元，第3天去西湖。", "Day 2: museums. Total $450.", "1. A\n2. B\n3. C",
               "The 2026-05-01 flight leaves at 9.", "五月一日出发，预算4000元。", "Sure, here it is.",
               "Booked for March 3rd and March 5th.", ""]
    turns = sorted(dev_texts())[::7]
    for i, turn in enumerate(turns):
        history = [turns[i - 1]] if i % 3 else []
        for answer in answers:
            assert contradictions(history + [turn], answer) == check_answer(constraints_of(history + [turn]), answer)
    assert any(contradictions([t], a) for t in turns for a in answers if "date" in " ".join(contradictions([t], a)))

