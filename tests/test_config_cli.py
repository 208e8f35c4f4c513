"""Config loading and the explain command."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest

from smartcache import ConfigError, load_config
from smartcache.cli import main
from smartcache.config import AuthConfig, CacheConfig, LifecycleConfig, StoreConfig
from smartcache.context import ContextSettings
from smartcache.decide import Decider, tier_of
from smartcache.defaults import DEFAULTS
from smartcache.fingerprint import Fingerprinter
from smartcache.fingerprint.encoders import MemoEncoder
from smartcache.store import MemoryStore
from smartcache.store.redis import RedisStore
from smartcache.store.sqlite import SqliteStore

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "hotel-breakfast.json"


def test_defaults_have_thresholds_for_every_encoder():
    cfg = load_config()
    for name in ("use-multilingual", "e5-small", "minilm-l6"):
        table = cfg.table_for(name)
        assert table.default.hit > table.default.half_hit
    use = cfg.table_for("use-multilingual")
    assert use.for_domain("code", tier_of("code")).hit > use.for_domain("travel", tier_of("travel")).hit
    assert {"medical", "legal", "finance"} <= cfg.repeat_only_domains and not cfg.disabled_domains


SECTIONS = [(CacheConfig, None), (LifecycleConfig, "lifecycle"), (StoreConfig, "store"), (AuthConfig, "auth"),
            (ContextSettings, "context")]


@pytest.mark.parametrize("cls, table", SECTIONS, ids=[c.__name__ for c, _ in SECTIONS])
def test_every_config_field_has_its_one_default_in_the_packaged_file(cls, table):
    values = DEFAULTS if table is None else DEFAULTS[table]
    names = {f.name for f in dataclasses.fields(cls)}
    assert names - set(values) == set(), "fields without a value in data/defaults.toml"
    assert set(values) - names == set(), "keys in data/defaults.toml that no field reads"
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            continue   # CacheConfig: built only by load_config, from the file
        packaged = values[f.name]
        assert default == (frozenset(packaged) if isinstance(default, frozenset) else packaged), f.name


def test_section_defaults_are_what_load_config_builds():
    cfg = load_config()
    assert (cfg.lifecycle, cfg.store, cfg.auth, cfg.context) == (
        LifecycleConfig(), StoreConfig(), AuthConfig(), ContextSettings())


@pytest.mark.parametrize("part, param, key", [
    (Fingerprinter, "topic_threshold", "topic_threshold"),
    (MemoEncoder, "capacity", "memo_size"),
    (MemoryStore, "ann_above", "store.ann_above"),
    (SqliteStore, "synchronous", "store.synchronous"),
    (RedisStore, "prefix", "store.prefix"),
    (Decider, "disabled_domains", "disabled_domains"),
    (Decider, "repeat_only_domains", "repeat_only_domains"),
], ids=lambda v: v if isinstance(v, str) else v.__name__)
def test_the_parts_keyword_defaults_are_the_packaged_ones(part, param, key):
    value = DEFAULTS
    for name in key.split("."):
        value = value[name]
    default = inspect.signature(part.__init__).parameters[param].default
    assert default == (frozenset(value) if isinstance(default, frozenset) else value)


def test_a_config_file_overrides_per_domain(tmp_path):
    path = tmp_path / "smartcache.toml"
    path.write_text('[thresholds.use-multilingual.domain.travel]\nhit = 0.9\n[lifecycle]\npromotion_window_s = 5\n')
    cfg = load_config(path)
    table = cfg.table_for("use-multilingual")
    assert table.for_domain("travel", "low").hit == 0.9
    assert table.for_domain("writing", "low").hit == 0.80
    assert cfg.lifecycle.promotion_window_s == 5


@pytest.mark.parametrize("text, match", [
    ("colour = 1\n", "unknown config keys"),
    # A removed feature's key says so, rather than a bare "unknown".
    ("use_cross_encoder = false\n", "cross-encoder was removed"),
    ("use_cross_encoder = false\ncolour = 1\n", r"removed.*unknown config keys: \['colour'\]"),
    ("[thresholds.use-multilingual.default]\nhit = 0.3\nhalf_hit = 0.6\n", "must not exceed"),
    ("[thresholds.use-multilingual.default]\nhit = 7\n", r"\[-1, 1\]"),
    ("[lifecycle]\nwindow = 3\n", "invalid config"),
    ("this is not toml", "not valid TOML"),
    ('[auth]\ntrust_tenant_header = "false"\n', "true or false"),
    ("[auth]\nkeys = []\n", "invalid config"),
    # Its readers open the file again: an in-memory database would be another, empty one.
    ('[store]\nbackend = "sqlite"\npath = ":memory:"\n', "needs a file path"),
    ('[store]\nbackend = "sqlite"\npath = "file:c.db?mode=memory"\n', "needs a file path"),
])
def test_bad_config_is_a_config_error(tmp_path, text, match):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_config(path)


def test_explain_prints_the_decision_and_its_reasons(capsys):
    assert main(["explain", str(EXAMPLE), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["decision"]["zone"] == "hit" and out["as_expected"] is True
    assert out["decision"]["reasons"][0]["code"] == "semantic_match"
    assert out["probe_tags"]["resolved_turn"].startswith("西湖国宾馆")


def test_explain_human_output(capsys):
    assert main(["explain", str(EXAMPLE)]) == 0
    text = capsys.readouterr().out
    assert "zone: hit" in text and "reasons:" in text


def test_explain_bad_input_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"probe": {"messages": []}}')
    assert main(["explain", str(bad)]) == 2
    assert "error" in capsys.readouterr().err
    assert main(["explain", str(tmp_path / "missing.json")]) == 2


def test_the_auth_table_is_read(tmp_path):
    assert load_config().auth.keys_file == "" and load_config().auth.trust_tenant_header is False
    path = tmp_path / "smartcache.toml"
    path.write_text('[auth]\nkeys_file = "keys.toml"\ntrust_tenant_header = true\n')
    assert load_config(path).auth.keys_file == "keys.toml" and load_config(path).auth.trust_tenant_header is True


@pytest.mark.parametrize("keys, extra, match", [
    ('[[keys]]\nkey = "sk-a"\n', [], "needs key and tenant"),
    ('[[keys]]\nkey = "sk-a"\ntenant = "a"\n', ["--admin-token", "sk-a"], "admin token is also"),
    (None, [], "cannot read keys file"),
], ids=["bad-file", "key-as-admin-token", "missing-file"])
def test_serve_refuses_bad_keys_before_loading_the_engine(tmp_path, capsys, keys, extra, match):
    path = tmp_path / "keys.toml"
    if keys is not None:
        path.write_text(keys)
    assert main(["serve", "--store", "memory", "--keys", str(path), *extra]) == 2
    assert match in capsys.readouterr().err


@pytest.mark.parametrize("config, data, match", [
    ("this is not toml", True, "not valid TOML"),
    ("colour = 1\n", True, "unknown config keys"),
    (None, True, "cannot read config"),
    ("", False, "does not exist"),
    ("", "empty", "no *.jsonl training cases"),
], ids=["bad-toml", "unknown-key", "missing-config", "missing-data", "empty-data"])
def test_train_bad_input_is_one_line_and_exit_2(tmp_path, capsys, config, data, match):
    folder = tmp_path / "training"
    if data:
        folder.mkdir()
        if data != "empty":
            (folder / "cases.jsonl").write_text("{}\n")
    args = ["train", "--data", str(folder), "--out", str(tmp_path / "model.json"), "--report", str(tmp_path / "r")]
    if config is not None:
        (tmp_path / "smartcache.toml").write_text(config)
    args += ["--config", str(tmp_path / "smartcache.toml")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("smartcache: error: ") and match in err and "Traceback" not in err
    assert err.count("\n") == 1 and not (tmp_path / "model.json").exists()
