"""The admin API: stats for the dashboard, recent decisions, entries, invalidation, versions.

Bound to 127.0.0.1 by default; with ``--admin-token`` every admin call needs
``Authorization: Bearer <token>`` (a token of its own: a tenant's API key never opens it).
With API keys configured and no admin token, the admin API is closed: it reads every
tenant's answers. Each call is logged on ``smartcache.admin`` with the tenant it touched
(the dashboard's polls of stats and decisions at DEBUG, the rest at INFO).
"""

from __future__ import annotations

import hmac
import logging
import os
import time
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from smartcache.errors import AuthenticationError, EntryNotFound, InvalidRequest
from smartcache.gateway.service import ChatService
from smartcache.store import Entry, EntryState

log = logging.getLogger("smartcache.admin")


class FeedbackBody(BaseModel):
    entry: str = Field(min_length=1, max_length=64)
    kind: Literal["positive", "negative", "regenerate"]


class PromoteBody(BaseModel):
    to_global: bool = False


class KindBody(BaseModel):
    kind: Literal["positive", "negative", "regenerate"]


class BumpBody(BaseModel):
    tenant: str = Field(default="default", min_length=1, max_length=256)
    model: str | None = Field(default=None, min_length=1, max_length=256)


def entry_json(entry: Entry, *, full: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": entry.cache_id, "state": entry.state.value, "scope": entry.scope.value, "tenant": entry.tenant,
        "session": entry.session_id or None, "domain": entry.domain, "question": entry.signature.text,
        "answer": entry.answer.text if full else entry.answer.text[:160], "created_at": entry.created_at,
        "expires_at": None if entry.expires_at == float("inf") else entry.expires_at,
        "hit_count": entry.hit_count, "feedback_score": round(entry.feedback_score, 3),
        "prompt_tokens": entry.prompt_tokens,
    }
    if full:
        out["signature"] = entry.signature.to_json()
        out["version_key"] = entry.version_key
        out["key_facts"] = list(entry.answer.key_facts)
    return out


def audit(action: str, tenant: str | None, *, level: int = logging.INFO, **detail: Any) -> None:
    """One log line per admin call, naming the tenant it touched ('*': every tenant, '-': none)."""
    extra = "".join(f" {k}={v}" for k, v in detail.items() if v is not None)
    log.log(level, "admin %s tenant=%s%s", action, tenant if tenant is not None else "*", extra)


def admin_router(service: ChatService, token: str | None, *, closed: bool = False) -> APIRouter:
    """``closed``: refuse every call (keys are configured but no admin token was given)."""
    cache = service.cache

    def check(request: Request) -> None:
        if closed:
            raise AuthenticationError("the admin API is closed (API keys are configured, or the gateway is "
                                      "bound beyond loopback): start it with --admin-token to use /admin",
                                      "admin_api_closed")
        if token is None:
            return
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            raise AuthenticationError("the admin API needs Authorization: Bearer <admin token>",
                                      "invalid_admin_token")

    router = APIRouter(prefix="/admin", dependencies=[Depends(check)])
    # Handlers that touch the store are plain functions: FastAPI runs them on its thread
    # pool, so a Redis round trip never stalls the event loop.

    def require(cache_id: str, action: str) -> Entry:
        entry = cache.get(cache_id)
        audit(action, entry.tenant if entry is not None else "-", entry=cache_id)
        if entry is None:
            raise EntryNotFound(f"no entry {cache_id}")
        return entry

    @router.get("/stats")
    def stats() -> dict[str, Any]:
        audit("stats", None, level=logging.DEBUG)       # the dashboard polls it every 2 s
        s = cache.stats()
        view = service.telemetry_view()     # with several workers: all of them, added up
        traffic = view.summary()
        precision, judged = service.shadow.precision()
        engine_kv = getattr(service.engine, "kv", None)
        return {
            "now": time.time(), "encoder": s.encoder, "entries": s.entries, "by_state": dict(s.by_state),
            "lookups": s.lookups, "by_zone": dict(s.by_zone), "hit_rate": s.hit_rate,
            "requests": traffic.requests, "by_status": traffic.by_status,
            "saved_tokens": traffic.saved_tokens, "prompt_tokens": traffic.prompt_tokens,
            "pollution": traffic.pollution, "pollution_rate": traffic.pollution_rate,
            "shadow_precision": precision, "shadow_checked": judged,
            "learning": {**_learning(s), "by_tenant": {t: cache.learned(t) for t in _learning_tenants(cache)},
                         "sharing_by_tenant": {t: cache.sharing(t) for t in _learning_tenants(cache)}},
            "invalidations": s.invalidations, "evicted": s.evicted, "timeline": view.timeline_json(),
            "timeline_bucket_s": view.bucket_s, "by_tenant": view.tenants_json(),
            "kv_cache": engine_kv.stats().__dict__ if engine_kv is not None else None,
            "store": _store(cache.backend),
            # Which worker answered; the traffic figures above are every worker's (a tick behind for the
            # others), while lookups, by_zone, hit_rate, shadow and learning are this worker's.
            "worker": {"pid": os.getpid(), "workers": service.settings.workers,
                       "runs_lifecycle": cache.lifecycle.lease.mine(),
                       "requests": service.telemetry.summary().requests},
        }

    @router.get("/decisions")
    def decisions(limit: int = Query(50, ge=1, le=500)) -> dict[str, Any]:
        audit("decisions", None, level=logging.DEBUG, limit=limit)      # ditto
        return {"data": service.telemetry_view().recent_json(limit)}

    @router.get("/entries")
    def entries(tenant: str | None = None, session: str | None = None, state: str | None = None,
                      limit: int = Query(100, ge=1, le=1000)) -> dict[str, Any]:
        audit("list_entries", tenant, session=session, state=state)
        states = None
        if state is not None:
            try:
                states = [EntryState(state)]
            except ValueError:
                raise InvalidRequest(f"state must be one of {[s.value for s in EntryState]}") from None
        found = cache.entries(tenant=tenant, session=session, states=states)
        found.sort(key=lambda e: e.created_at, reverse=True)
        return {"data": [entry_json(e) for e in found[:limit]], "total": len(found)}

    @router.get("/entries/{cache_id}")
    def entry(cache_id: str) -> dict[str, Any]:
        return entry_json(require(cache_id, "inspect"), full=True)

    @router.delete("/entries/{cache_id}")
    def drop(cache_id: str) -> dict[str, Any]:
        require(cache_id, "drop")
        return {"id": cache_id, "deleted": cache.delete(cache_id)}

    @router.post("/entries/{cache_id}/promote")
    def promote(cache_id: str, body: PromoteBody) -> dict[str, Any]:
        require(cache_id, "promote")
        return entry_json(cache.promote(cache_id, to_global=body.to_global))

    @router.post("/entries/{cache_id}/feedback")
    def feedback(cache_id: str, body: KindBody) -> dict[str, Any]:
        require(cache_id, f"feedback_{body.kind}")
        result = cache.feedback(cache_id, body.kind)
        return {"id": result.cache_id, "state": result.state.value, "score": result.feedback_score}

    @router.post("/sessions/{session}/invalidate")
    def invalidate_session(session: str, tenant: str = "default") -> dict[str, Any]:
        audit("invalidate_session", tenant, session=session)
        return {"session": session, "tenant": tenant, "invalidated": cache.invalidate(tenant=tenant,
                                                                                      session=session)}

    @router.post("/versions/bump")
    def bump(body: BumpBody) -> dict[str, Any]:
        audit("bump_version", body.tenant, model=body.model)
        return {"tenant": body.tenant, "model": body.model,
                "invalidated": cache.bump_version(body.tenant, body.model)}

    return router


def _store(backend: Any) -> dict[str, Any]:
    """How this worker opened its store (a SQLite file: from its index snapshot, or its rows and
    why), the rows it could not read, and its graphs by how they were had (reused or rebuilt)."""
    graphs: dict[str, int] = {}
    for status in (getattr(backend, "graph_status", None) or {}).values():
        how = status.split(":", 1)[0]
        graphs[how] = graphs.get(how, 0) + 1
    return {"opened": getattr(backend, "snapshot_status", None) or None,
            "unreadable_rows": getattr(backend, "corrupt", None), "graphs": graphs}


def _learning(s) -> dict[str, Any]:
    """The live error of served answers, measured by checks against the engine, with its
    95 % Clopper-Pearson interval; the labels the cache has learned from; the answers it put in
    a global pool once sessions proved them safe to share."""
    from smartcache.eval.streams import Rate
    rate = Rate.of(s.checks_wrong, s.checks)
    return {"observations": s.observations, "checks": s.checks, "checks_wrong": s.checks_wrong, "shared": s.shared,
            "live_error": rate.value if s.checks else None, "live_error_lower95": rate.lower if s.checks else None,
            "live_error_upper95": rate.upper if s.checks else None}


def _learning_tenants(cache, limit: int = 50) -> list[str]:
    """The tenants whose learned points the stats show (the first ``limit``; the dashboard polls)."""
    return [] if cache.policy is None else cache.policy.tenants()[:limit]
