"""Build the project's multi-turn benchmark (CASES.md format) from scripts/benchmark_data.py.

    .venv/bin/python scripts/build_benchmark.py --out build/benchmark.jsonl [--seed 0] [--per-cell 27]

Four domains x two languages x fifteen categories, ``--per-cell`` cases each
(27 gives 3,240). Histories hold 0-8 prior exchanges; Chinese travel cases take
real CrossWOZ dialogues (../shared/data/crosswoz) as their history when the data
is there. Every random choice comes from one seeded generator, so a seed always
builds the same file; the file is built, never edited by hand.

    category                        expect     what the probe is
    paraphrase                      hit        another wording, width and numerals, same history
    reference                       hit        the subject named by reference ("那家酒店")
    background                      hit        background or small talk added that changes nothing
    global_faq                      hit        a context-free FAQ, another session, global scope
    entity_change / number_change   miss       another entity, another number (or from/to swapped)
    intent_reversal                 miss       the reversed ask ("怎么关闭…")
    related_but_different           miss       a neighbouring task ("部署" / "迁移")
    constraint_change               half_hit   a follow-up that changes a condition
    correction                      miss       a follow-up that corrects ("不对，…")
    topic_switch                    miss       a follow-up on another topic
    same_last_message_other_context miss       the same last message after another history
    time_sensitive                  miss       depends on the current time
    cross_session_personal          miss       a personal request, asked from another session
    reset                           miss       the user starts over and asks again
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmark_data import (BACKGROUND, CITY_SIGHTS_EN, CITY_SIGHTS_ZH, DOMAINS, RESET, SMALL_TALK,  # noqa: E402
                            TOPIC_SWITCH, return_policy)

from smartcache.paths import shared_data  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CROSSWOZ = (shared_data() or Path("../shared/data")) / "crosswoz" / "val.json.zip"   # the fallback only names it
CATEGORIES = ("paraphrase", "reference", "background", "global_faq", "entity_change", "number_change",
              "intent_reversal", "related_but_different", "constraint_change", "correction", "topic_switch",
              "same_last_message_other_context", "time_sensitive", "cross_session_personal", "reset")
EXPECT = {"paraphrase": "hit", "reference": "hit", "background": "hit", "global_faq": "hit",
          "constraint_change": "half_hit"}
_ZH_NUMERAL_SLOTS = {"days", "people", "replicas", "words", "budget", "hours", "price"}
_ZH_DIGITS = "零一二三四五六七八九"
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def zh_numeral(n: int) -> str:
    """3 -> 三, 12 -> 十二, 5000 -> 五千, 10000 -> 一万 (the forms people type)."""
    if n < 10:
        return "两" if n == 2 else _ZH_DIGITS[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return ("" if tens == 1 else _ZH_DIGITS[tens]) + "十" + (_ZH_DIGITS[ones] if ones else "")
    if n % 10000 == 0:
        return zh_numeral(n // 10000) + "万"
    if n < 10000 and n % 1000 == 0:
        return _ZH_DIGITS[n // 1000] + "千"
    if n < 1000 and n % 100 == 0:
        return _ZH_DIGITS[n // 100] + "百"
    return str(n)


class Slots(dict):
    """One case's slot values: ``x`` plus distinct alternatives ``x2``, ``x3``."""

    @classmethod
    def draw(cls, spec: dict, lang: str, rng: random.Random, pinned: dict | None = None) -> "Slots":
        slots = cls()
        for name, values in spec.items():
            chosen = rng.sample(values, k=min(3, len(values)))
            if pinned and name in pinned:
                chosen = [pinned[name]] + [v for v in chosen if v != pinned[name]][:2]
            for i, value in enumerate(chosen):
                slots[name if i == 0 else f"{name}{i + 1}"] = value
        sights = CITY_SIGHTS_ZH if lang == "zh" else CITY_SIGHTS_EN
        if "city" in slots and slots["city"] in sights:
            own = sights[slots["city"]]
            others = [s for c, ss in sights.items() if c != slots["city"] for s in ss]
            slots["sight"], slots["sight2"] = rng.choice(own), rng.choice(others)
        if "days" in slots:
            slots["day_plan"] = day_plan(slots["days"], lang)
            slots["policy"] = return_policy(slots["days"], lang)
        return slots

    def answer(self, template: str, asked: list[str], spec: dict) -> str:
        """The answer ``template`` filled, its facts that nothing asked names (a train's hours,
        a ticket's price, a refund's amount, the hotels a list recommends) drawn from what
        was asked: one question has one answer in every case, as in the world. Drawn per
        case, two cases asking the same thing word for word had different answers, and a
        competing run (every case's entries in one cache) counted serving either one's
        answer to the other as a wrong answer. ``asked``: the templates whose slots the
        conversation names (the request's wordings, the domain's history exchanges)."""
        names = _PLACEHOLDER.findall(template)
        named = {n for t in asked for n in _PLACEHOLDER.findall(t)}
        facts = {n for n in names if n not in named and n.rstrip("23") in spec["slots"]}
        if not facts:
            return self.fill(template)
        given = sorted((n, str(self[n])) for n in set(names) - facts)
        rng = random.Random(f"{template}|{given}")      # a str seed: the same draw on every run
        values = Slots(self)
        for base in sorted({n.rstrip("23") for n in facts}):
            chosen = rng.sample(spec["slots"][base], k=min(3, len(spec["slots"][base])))
            for i, value in enumerate(chosen):
                name = base if i == 0 else f"{base}{i + 1}"
                if name in facts:
                    values[name] = value
        return values.fill(template)

    def fill(self, template: str, *, numerals: bool = False) -> str:
        values = dict(self)
        if numerals:
            values.update({k: zh_numeral(v) for k, v in self.items()
                           if isinstance(v, int) and k.rstrip("23") in _ZH_NUMERAL_SLOTS})
        return template.format(**values)


class Said(tuple):
    """An exchange (user turn, reply) that remembers the templates it was filled from, so that
    an answer knows which slots its conversation names (a CrossWOZ exchange names none)."""

    templates: tuple[str, ...]

    def __new__(cls, user: str, reply: str, templates: tuple[str, ...] = ()) -> "Said":
        said = super().__new__(cls, (user, reply))
        said.templates = templates
        return said


def named(history: list, *more: str) -> list[str]:
    """The templates whose slots a conversation names: its exchanges' and ``more``."""
    return [t for said in history for t in getattr(said, "templates", ())] + list(more)


def day_plan(days: int, lang: str) -> str:
    zh = ["市区经典景点", "博物馆和老街", "周边自然风光", "特色美食探店", "休闲购物"]
    en = ["the old town and main square", "museums and markets", "a day trip to the countryside", "food tour", "shopping and rest"]
    if lang == "zh":
        return "\n".join(f"第{i}天：{zh[(i - 1) % 5]}" for i in range(1, days + 1))
    return "\n".join(f"Day {i}: {en[(i - 1) % 5]}" for i in range(1, days + 1))


_TO_HALF = str.maketrans("，？！：；（）", ",?!:;()")
_TO_FULL = str.maketrans(",?!:;", "，？！：；")


def vary(text: str, lang: str, rng: random.Random) -> str:
    """How the same words get typed differently: punctuation width, spacing, case, end marks."""
    roll = rng.random()
    if lang == "zh":
        if roll < 0.3:
            return text.translate(_TO_HALF)
        if roll < 0.45:
            return text.translate(_TO_FULL)
        if roll < 0.6:
            return text.rstrip("？?。.！!") + rng.choice(["", "？", "?", "呢？"] if text.endswith(("？", "?")) else ["", "。"])
        return text
    if roll < 0.2:
        return text[:1].lower() + text[1:]
    if roll < 0.35:
        return text.rstrip("?.!")
    if roll < 0.45:
        return text.replace(" ", "  ", 1)
    return text


def load_crosswoz() -> list[list[tuple[str, str]]]:
    """CrossWOZ validation dialogues as lists of (user, assistant) exchanges."""
    if not CROSSWOZ.exists():
        return []
    with zipfile.ZipFile(CROSSWOZ) as zf:
        data = json.loads(zf.read(zf.namelist()[0]))
    dialogues = []
    for key in sorted(data, key=lambda k: int(k) if k.isdigit() else k):
        msgs = data[key]["messages"]
        pairs = [(msgs[i]["content"], msgs[i + 1]["content"]) for i in range(0, len(msgs) - 1, 2)
                 if msgs[i]["role"] == "usr" and msgs[i + 1]["role"] == "sys"]
        if len(pairs) >= 2:
            dialogues.append(pairs)
    return dialogues


class Builder:
    def __init__(self, seed: int, crosswoz: list[list[tuple[str, str]]]) -> None:
        self.rng = random.Random(seed)
        self.crosswoz = crosswoz

    # -- pieces ---------------------------------------------------------------------

    def history(self, domain: str, lang: str, slots: Slots, k: int, woz: bool) -> list[tuple[str, str]]:
        """k prior exchanges: a CrossWOZ dialogue's opening, or drawn from the domain's context exchanges."""
        if woz:
            return list(self.rng.choice(self.crosswoz)[:k])
        pool = DOMAINS[domain, lang]["history"]
        picks = self.rng.sample(pool, k=min(k, len(pool))) + self.rng.choices(pool, k=max(0, k - len(pool)))
        return [Said(slots.fill(u), slots.fill(a), (u, a)) for u, a in picks]

    @staticmethod
    def messages(system: str, history: list[tuple[str, str]], *tail: str) -> list[dict]:
        out = [{"role": "system", "content": system}]
        for u, a in history:
            out += [{"role": "user", "content": u}, {"role": "assistant", "content": a}]
        for i, text in enumerate(tail):
            out.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
        return out

    def distractors(self, system: str, history: list[tuple[str, str]]) -> list[dict]:
        """Entries the session wrote on its earlier turns: they compete with the target."""
        if not history or self.rng.random() < 0.5:
            return []
        j = self.rng.randrange(len(history))
        # A reply that names what its conversation never did ("了解，苏州周边…" after "我们喜欢自然
        # 风光") is no answer to that conversation alone: two cases would hold one request with two answers.
        templates = getattr(history[j], "templates", ())
        if templates and not set(_PLACEHOLDER.findall(templates[1])) <= {
                n for t in named(history[:j], templates[0]) for n in _PLACEHOLDER.findall(t)}:
            return []
        return [{"messages": self.messages(system, history[:j], history[j][0]), "answer": history[j][1]}]

    def pick(self, options):
        return self.rng.choice(options)

    # -- one case --------------------------------------------------------------------

    def case(self, domain: str, lang: str, category: str, cid: str) -> dict:
        spec = DOMAINS[domain, lang]
        rng, system = self.rng, spec["system"]
        k = rng.randint(0, 8)
        # Chinese travel: half the histories are real CrossWOZ dialogues (set in Beijing).
        woz = bool(domain == "travel" and lang == "zh" and self.crosswoz and k and rng.random() < 0.5)
        slots = Slots.draw(spec["slots"], lang, rng, pinned={"city": "北京"} if woz else None)
        history = self.history(domain, lang, slots, k, woz)
        frames = spec["frames"]
        session = f"s-{cid}"
        case = {"id": cid, "lang": lang, "domain": domain, "category": category, "session": session,
                "expect": EXPECT.get(category, "miss")}
        numerals = lang == "zh" and rng.random() < 0.35
        probe_answer: str | None = None

        def with_fields(field):
            return [f for f in frames if f.get(field)]

        def entry(msgs, answer):
            return {"messages": msgs, "answer": answer}

        def asked(frame, before):
            """What a conversation about ``frame`` after ``before`` names: its request, its history."""
            return named(before, *frame["asks"], *frame.get("refs", ()))

        if category in ("paraphrase", "background", "entity_change", "number_change", "intent_reversal",
                        "related_but_different", "constraint_change", "correction", "topic_switch", "reset"):
            need = {"entity_change": "entity", "number_change": "number", "intent_reversal": "reversal",
                    "related_but_different": "related", "constraint_change": "change", "correction": "correction"}
            frame = self.pick(with_fields(need[category]) if category in need else frames)
            i = rng.randrange(len(frame["asks"]))
            ask = slots.fill(frame["asks"][i])
            answer = slots.answer(frame["answer"], asked(frame, history), spec)
            cached = self.distractors(system, history) + [entry(self.messages(system, history, ask), answer)]
            others = [a for j, a in enumerate(frame["asks"]) if j != i] or frame["asks"]
            if category == "paraphrase":
                probe = self.messages(system, history, vary(slots.fill(self.pick(others), numerals=numerals), lang, rng))
            elif category == "background":
                wording = slots.fill(self.pick(frame["asks"]), numerals=numerals)
                if history and rng.random() < 0.5:
                    at = rng.randint(0, len(history))
                    probe = self.messages(system, history[:at] + [self.pick(SMALL_TALK[lang])] + history[at:], wording)
                else:
                    probe = self.messages(system, history, self.pick(BACKGROUND[lang]) + wording)
            elif category in ("entity_change", "number_change"):
                slot = frame["entity" if category == "entity_change" else "number"]
                changed = Slots(slots)
                changed[slot] = slots[slot[:-1] + str(int(slot[-1]) + 1) if slot[-1].isdigit() else f"{slot}2"]
                if slot == "days":
                    changed["day_plan"], changed["policy"] = day_plan(changed["days"], lang), return_policy(changed["days"], lang)
                if slot == "city" and "sight" in slots:
                    changed["sight"] = slots["sight2"]
                if category == "entity_change" and frame.get("swap") and rng.random() < 0.4:
                    swap = self.pick(frame["swap"])
                    text = slots.fill(swap)
                    # The swapped wording names the asks' slots in another order: that order's answer.
                    changed = Slots(slots)
                    for name, value_of in zip(_PLACEHOLDER.findall(frame["asks"][0]), _PLACEHOLDER.findall(swap)):
                        changed[name] = slots[value_of]
                else:
                    text = changed.fill(self.pick(frame["asks"]), numerals=numerals)
                probe = self.messages(system, history, vary(text, lang, rng))
                probe_answer = changed.answer(frame["answer"], asked(frame, history), spec)
            elif category == "intent_reversal":
                probe = self.messages(system, history, vary(slots.fill(self.pick(frame["reversal"])), lang, rng))
            elif category == "related_but_different":
                probe = self.messages(system, history, vary(slots.fill(self.pick(frame["related"])), lang, rng))
            elif category == "constraint_change":
                probe = self.messages(system, history, ask, answer, vary(slots.fill(self.pick(frame["change"])), lang, rng))
            elif category == "correction":
                probe = self.messages(system, history, ask, answer, vary(slots.fill(self.pick(frame["correction"])), lang, rng))
            elif category == "topic_switch":
                other_domain = self.pick([d for d, l in DOMAINS if l == lang and d != domain])
                other = DOMAINS[other_domain, lang]
                other_slots = Slots.draw(other["slots"], lang, rng)
                question = other_slots.fill(self.pick(self.pick(other["frames"])["asks"]))
                probe = self.messages(system, history, ask, answer, self.pick(TOPIC_SWITCH[lang]) + question)
            else:  # reset
                again = slots.fill(self.pick(frame["asks"]), numerals=numerals)
                probe = self.messages(system, history, ask, answer, self.pick(RESET[lang]) + again)
        elif category == "reference":
            frame = self.pick(with_fields("refs"))
            intro = Said(slots.fill(frame["intro"][0]), slots.fill(frame["intro"][1]), tuple(frame["intro"]))
            ctx = history[: max(0, k - 1)] + [intro]
            explicit = slots.fill(self.pick(frame["asks"]), numerals=numerals)
            ref = slots.fill(self.pick(frame["refs"]))
            first, second = (explicit, ref) if rng.random() < 0.7 else (ref, explicit)
            answer = slots.answer(frame["answer"], asked(frame, ctx), spec)
            cached = self.distractors(system, ctx) + [entry(self.messages(system, ctx, first), answer)]
            probe = self.messages(system, ctx, vary(second, lang, rng))
        elif category == "global_faq":
            asks, answer = self.pick(spec["faq"])
            i = rng.randrange(len(asks))
            cached = [entry(self.messages(system, [], asks[i]), answer)]
            ctx = history[: rng.randint(0, 3)]
            probe = self.messages(system, ctx, vary(self.pick([a for j, a in enumerate(asks) if j != i]), lang, rng))
            case.update(scope="global", probe_session=f"{session}-other")
        elif category == "same_last_message_other_context":
            (iu, ia), ask, answer_t = self.pick(spec["other_context"])
            other = Slots(slots)
            for _ in range(20):
                other = Slots.draw(spec["slots"], lang, rng)
                if (other.fill(iu), other.fill(ia)) != (slots.fill(iu), slots.fill(ia)):
                    break
            base = history[: max(0, k - 1)]
            told = named(base, iu, ia, ask)
            cached = [entry(self.messages(system, base + [(slots.fill(iu), slots.fill(ia))], ask),
                            slots.answer(answer_t, told, spec))]
            probe = self.messages(system, base + [(other.fill(iu), other.fill(ia))], ask)
            probe_answer = other.answer(answer_t, told, spec)
        elif category == "time_sensitive":
            pair = self.pick(spec["time_sensitive"])
            first, second = rng.sample(pair, 2)
            cached = [entry(self.messages(system, history, slots.fill(first)), "（依据当时的信息作答）" if lang == "zh"
                            else "(answered with the information of that moment)")]
            probe = self.messages(system, history, vary(slots.fill(second), lang, rng))
        elif category == "cross_session_personal":
            pair = self.pick(spec["personal"])
            asked = slots.fill(self.pick(pair))
            cached = [entry(self.messages(system, history, asked),
                            slots.fill("（只属于这位用户的答复：{order}）" if "order" in slots and lang == "zh" else
                                       "（只属于这位用户的答复）" if lang == "zh" else "(an answer about this user's own account)"))]
            probe = self.messages(system, history, slots.fill(self.pick(pair)))
            case["probe_session"] = f"{session}-other"
        else:
            raise ValueError(category)
        case["cached"] = cached
        case["probe"] = {"messages": probe}
        # What the engine answers the probe itself, where the frame says: in a competing run
        # another case's entry may hold it, and serving it is right (CASES.md, ``probe.answer``).
        if probe_answer is not None and all(probe_answer != c["answer"] for c in cached):
            case["probe"]["answer"] = probe_answer
        return case

    def build(self, per_cell: int) -> list[dict]:
        cases = []
        for (domain, lang) in DOMAINS:
            for category in CATEGORIES:
                for n in range(per_cell):
                    cases.append(self.case(domain, lang, category, f"{domain}-{lang}-{category}-{n:03d}"))
        return cases


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "build" / "benchmark.jsonl"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-cell", type=int, default=27, help="cases per domain x language x category")
    args = parser.parse_args(argv)
    crosswoz = load_crosswoz()
    if not crosswoz:
        print(f"note: {CROSSWOZ} not found; Chinese travel histories come from the built-in exchanges only",
              file=sys.stderr)
    cases = Builder(args.seed, crosswoz).build(args.per_cell)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(json.dumps(case, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
