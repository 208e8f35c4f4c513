"""Replay whole sessions turn by turn, and warm a cache from historical sessions.

A session is a list of OpenAI-style messages (system, then user / assistant turns).
Replay sends every user turn with its full history, as a client would: a hit is
served from cache; otherwise the logged assistant reply stands for the engine's
answer and is written (and promoted, as if the promotion window had passed).

    hit_rate         hits / user turns looked up
    precision@hit    correct hits / hits, where turns carry labels (benchmark cases)
    saved_tokens     prompt tokens not prefilled: the whole prompt on a hit, the history
                     prefix on a half-hit (the engine's KV reuse), by the bundled tokenizer
    cache_pollution  hits the user then corrects ("不对…") or regenerates (sends again)

Sessions come from a JSONL file (one ``{"session": id, "messages": [...]}`` a line),
from CrossWOZ dialogues, or from benchmark cases (their cached entries, then the probe).
"""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from smartcache.cache import SmartCache
from smartcache.context import normalize_text, parse_messages
from smartcache.decide import Zone
from smartcache.errors import InvalidRequest, SmartCacheError
from smartcache.eval.cases import Case
from smartcache.fingerprint import ChangeFlag, change_flags


@dataclass
class Session:
    session: str
    messages: list[dict[str, Any]]
    # For labelled turns: user-turn index -> the answer a hit must serve (None: no hit allowed).
    labels: dict[int, str | None] = field(default_factory=dict)
    scope: str = "session"


@dataclass
class ReplayStats:
    sessions: int = 0
    turns: int = 0
    zones: Counter = field(default_factory=Counter)
    labelled_hits: int = 0
    correct_hits: int = 0
    saved_hit_tokens: int = 0
    saved_prefix_tokens: int = 0
    prompt_tokens: int = 0
    pollution: int = 0

    def to_json(self) -> dict[str, Any]:
        hits = self.zones["hit"]
        return {"sessions": self.sessions, "turns": self.turns, "zones": dict(self.zones),
                "hit_rate": hits / self.turns if self.turns else 0.0,
                "precision_at_hit": (self.correct_hits / self.labelled_hits) if self.labelled_hits else None,
                "saved_tokens": self.saved_hit_tokens + self.saved_prefix_tokens,
                "saved_tokens_by_hits": self.saved_hit_tokens, "saved_tokens_by_half_hits": self.saved_prefix_tokens,
                "prompt_tokens": self.prompt_tokens,
                "saved_share": (self.saved_hit_tokens + self.saved_prefix_tokens) / self.prompt_tokens
                if self.prompt_tokens else 0.0,
                "cache_pollution": self.pollution}


def load_sessions(path: str | Path) -> list[Session]:
    """``{"session": id, "messages": [...]}`` per line; bad lines are named, never skipped."""
    sessions = []
    with Path(path).open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                messages = data["messages"]
                users = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"]
                if not users or any(not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant")
                                    for m in messages):
                    raise InvalidRequest("needs system / user / assistant messages and at least one user turn")
                parse_messages(messages[:users[-1] + 1])       # validates contents
                sessions.append(Session(str(data.get("session") or f"line-{n}"), messages,
                                        scope=str(data.get("scope", "session"))))
            except (json.JSONDecodeError, KeyError, TypeError, InvalidRequest) as exc:
                raise InvalidRequest(f"{path}:{n}: not a session ({exc})") from None
    return sessions


def crosswoz_sessions(path: str | Path, limit: int | None = None) -> list[Session]:
    with zipfile.ZipFile(path) as zf:
        data = json.loads(zf.read(zf.namelist()[0]))
    out = []
    for key in sorted(data, key=lambda k: int(k) if k.isdigit() else k)[:limit]:
        msgs = [{"role": "user" if m["role"] == "usr" else "assistant", "content": m["content"]}
                for m in data[key]["messages"]]
        out.append(Session(f"crosswoz-{key}", msgs))
    return out


def case_sessions(cases: Sequence[Case]) -> list[Session]:
    """Each case as sessions: its cached entries as turns answered, then the probe, labelled."""
    out = []
    for case in cases:
        for i, item in enumerate(case.cached):
            out.append(Session(case.session, list(item.messages) + [{"role": "assistant", "content": item.answer}],
                               scope=case.scope))
        probe = list(case.probe)
        user_turns = sum(1 for m in probe if m.get("role") == "user")
        out.append(Session(case.probe_session, probe + [{"role": "assistant", "content": "(engine answer)"}],
                           labels={user_turns - 1: case.expected_answer if case.expect == "hit" else None},
                           scope=case.scope))
    return out


def _is_follow_up_rejection(previous: str, current: str) -> bool:
    return normalize_text(previous) == normalize_text(current) or ChangeFlag.CORRECTION in change_flags(
        normalize_text(current))


def replay(cache: SmartCache, sessions: Iterable[Session], count_tokens: Callable[[list], int],
           progress: Callable[[], None] | None = None) -> ReplayStats:
    stats = ReplayStats()
    for session in sessions:
        stats.sessions += 1
        users = [i for i, m in enumerate(session.messages) if m.get("role") == "user"]
        last_hit_text: str | None = None
        for turn_no, at in enumerate(users):
            request = session.messages[:at + 1]
            text = str(request[-1].get("content", ""))
            if last_hit_text is not None and _is_follow_up_rejection(last_hit_text, text):
                stats.pollution += 1
            last_hit_text = None
            decision = cache.lookup(request, session=session.session)
            prompt = count_tokens(request)
            stats.turns += 1
            stats.prompt_tokens += prompt
            stats.zones[decision.zone.value] += 1
            if turn_no in session.labels:
                expected = session.labels[turn_no]
                if decision.zone is Zone.HIT:
                    stats.labelled_hits += 1
                    stats.correct_hits += expected is not None and decision.answer == expected
            if decision.zone is Zone.HIT:
                stats.saved_hit_tokens += prompt
                last_hit_text = text
            else:
                if decision.zone is Zone.HALF_HIT:
                    stats.saved_prefix_tokens += count_tokens(request[:-1]) if len(request) > 1 else 0
                reply = session.messages[at + 1] if at + 1 < len(session.messages) else None
                if reply is not None and reply.get("role") == "assistant" and decision.cacheable:
                    try:
                        result = cache.store(decision, str(reply.get("content", "")), scope=session.scope)
                    except SmartCacheError:
                        continue
                    if result.stored:
                        cache.promote(result.cache_id, to_global=session.scope == "global")
        if progress:
            progress()
    return stats


def warmup(cache: SmartCache, sessions: Sequence[Session], *, min_count: int = 2,
           to_global: bool = True) -> dict[str, Any]:
    """Write the scenarios that recur across historical sessions into ``cache``, ready to serve.

    A scenario is a user turn with its history, normalised (so "周末去杭州玩三天" and
    "周末去杭州玩3天" count together); only those seen in at least ``min_count`` sessions
    are written, each with the answer logged most often for it, into the tenant's global
    pool (a global entry with a history is served only under that same history), or with
    ``to_global=False`` into the first session that asked them."""
    seen: dict[str, dict[str, Any]] = {}
    for session in sessions:
        for at, m in enumerate(session.messages):
            if m.get("role") != "user" or at + 1 >= len(session.messages):
                continue
            reply = session.messages[at + 1]
            if reply.get("role") != "assistant":
                continue
            request = session.messages[:at + 1]
            key = json.dumps([[t.get("role"), normalize_text(str(t.get("content", "")))] for t in request],
                             ensure_ascii=False)
            slot = seen.setdefault(key, {"request": request, "session": session.session, "sessions": set(),
                                         "answers": Counter()})
            slot["sessions"].add(session.session)
            slot["answers"][str(reply.get("content", ""))] += 1
    written, refused = 0, Counter()
    for slot in sorted(seen.values(), key=lambda s: -len(s["sessions"])):
        if len(slot["sessions"]) < min_count:
            continue
        answer = slot["answers"].most_common(1)[0][0]
        result = cache.store(slot["request"], answer, session=slot["session"],
                             scope="global" if to_global else "session")
        if result.stored:
            cache.promote(result.cache_id, to_global=to_global)
            written += 1
        else:
            refused[str(result.reason)] += 1
    return {"scenarios": len(seen), "recurring": sum(1 for s in seen.values() if len(s["sessions"]) >= min_count),
            "written": written, "refused": dict(refused)}
