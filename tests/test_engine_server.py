"""The bundled engine in a process of its own (``engine/server.py``), as a worker of
``serve --workers N`` reaches it (``RemoteEngine``): the same answers, usage, model, version
key and errors as the engine in process."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from smartcache.engine import EngineError, EngineRequest, FakeEngine, Finished, GenerationParams, TextDelta
from smartcache.engine.local import MODEL_ID
from smartcache.engine.remote import RemoteEngine
from smartcache.engine.server import create_engine_app, engine_request
from conftest import U


class _Words:
    """The fake engine's token counts, standing in for the bundled tokenizer."""

    def __init__(self, engine: FakeEngine) -> None:
        self.count_tokens, self.count_text_tokens = engine.count_tokens, engine.count_text_tokens


def remote(fake: FakeEngine) -> RemoteEngine:
    return RemoteEngine(transport=httpx.ASGITransport(app=create_engine_app(fake)), tokenizer=_Words(fake))


def collect(engine, request):
    async def run():
        return [e async for e in engine.stream(request)]
    return asyncio.run(run())


def test_the_remote_engine_answers_as_the_engine_in_process_does():
    fake = FakeEngine(model_id=MODEL_ID)
    request = EngineRequest(MODEL_ID, [U("hi")], GenerationParams(max_tokens=64, stop=("\n",)))
    here = collect(FakeEngine(model_id=MODEL_ID), request)
    there = collect(remote(fake), request)
    assert [e.text for e in there if isinstance(e, TextDelta)] == [e.text for e in here if isinstance(e, TextDelta)]
    assert all(e.raw is None for e in there if isinstance(e, TextDelta))     # the worker writes its own stream
    assert there[-1] == here[-1] and isinstance(there[-1], Finished)         # usage, cached tokens included


def test_the_remote_engine_is_the_bundled_model_for_version_keys_and_models():
    from smartcache.engine.local import LocalEngine
    engine = remote(FakeEngine(model_id=MODEL_ID))
    assert (engine.model_id, engine.tokenizer_id, engine.accepts_any_model) == (MODEL_ID, LocalEngine.tokenizer_id,
                                                                               False)
    assert asyncio.run(engine.list_models()) == [{"id": MODEL_ID, "object": "model", "created": 0,
                                                  "owned_by": "smartcache"}]


def test_sampling_fields_reach_the_engine():
    seen = []
    fake = FakeEngine(model_id=MODEL_ID)
    stream = fake.stream

    def spy(request):
        seen.append(request.params)
        return stream(request)

    fake.stream = spy
    params = GenerationParams(max_tokens=7, temperature=0.5, top_p=0.9, seed=3, stop=("\n", "。"))
    collect(remote(fake), EngineRequest(MODEL_ID, [U("hi")], params))
    assert seen == [params]


def test_an_engine_error_keeps_its_status_and_code():
    fake = FakeEngine(model_id=MODEL_ID)
    fake.fail_status = 400
    with pytest.raises(EngineError) as caught:
        collect(remote(fake), EngineRequest(MODEL_ID, [U("hi")]))
    assert caught.value.status == 400 and caught.value.code == "fake_failure" and caught.value.body is None


def test_a_bad_engine_request_is_refused():
    with pytest.raises(ValueError):
        engine_request({"messages": "not a list"})
    assert engine_request({"messages": [], "stop": "x"}).params.stop == ("x",)


_CHILD = "from smartcache.engine.server import die_with_parent; die_with_parent(); print('alive', flush=True)"


@pytest.mark.integration
@pytest.mark.parametrize("parent_alive", [True, False])
def test_a_child_whose_parent_died_before_it_asked_to_die_with_it_exits_at_once(parent_alive):
    """A worker still importing when ``serve`` was SIGKILLed asked for the parent-death signal
    too late, and went on serving the port as an orphan (found after the crash test). It now
    compares its parent with the one ``serve`` named, and exits at once when they differ."""
    import os
    import subprocess
    import sys

    parent = os.getpid() if parent_alive else 1      # not our parent: as after a re-parenting
    done = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SMARTCACHE_PARENT_PID": str(parent)})
    assert (done.returncode, "alive" in done.stdout) == ((0, True) if parent_alive else (1, False)), done
