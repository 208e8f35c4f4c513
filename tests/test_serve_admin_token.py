"""Where ``serve`` takes its admin token from, and that the running process does not show it.

The resolution is checked in process; the processes (marked ``integration``) are real
``smartcache serve`` runs on a free 127.0.0.1 port, in upstream mode so no engine loads
(the admin API never calls the engine): their /proc/PID/cmdline is what ``ps`` shows
every local user.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx
import pytest

from conftest import free_port, serve
from smartcache.cli import build_parser, main
from smartcache.cli.admin_token import ENV, resolve_admin_token
from smartcache.cli.serve import _admin_token
from smartcache.config import load_config
from smartcache.errors import ConfigError

TOKEN = "admin-0f1e2d3c4b5a69788796a5b4"


def token_file(tmp_path: Path, text: str = TOKEN + "\n", mode: int = 0o600) -> str:
    path = tmp_path / "admin-token"
    path.write_text(text)
    path.chmod(mode)
    return str(path)


@pytest.mark.parametrize("flag, use_file, env, use_config, source", [
    (TOKEN, False, {}, False, "--admin-token"),
    (None, True, {}, False, "--admin-token-file"),
    (None, False, {ENV: TOKEN}, False, f"${ENV}"),
    (None, False, {}, True, "[auth] admin_token_file"),
    (None, True, {ENV: "from-the-env"}, False, "--admin-token-file"),      # a flag over the environment
    (None, False, {ENV: TOKEN}, True, f"${ENV}"),                          # the environment over the config
], ids=["flag", "file", "env", "config", "file-over-env", "env-over-config"])
def test_the_first_source_that_gives_a_token_wins(tmp_path, flag, use_file, env, use_config, source):
    path = token_file(tmp_path)
    found = resolve_admin_token(flag, path if use_file else None, env, path if use_config else "")
    assert found is not None and found.token == TOKEN and found.source.startswith(source)
    assert TOKEN not in found.source
    overridden = bool(env) and source != f"${ENV}"
    assert any(ENV in w and "precedence" in w for w in found.warnings) == overridden


def test_no_source_no_token():
    assert resolve_admin_token(None, None, {}, "") is None
    assert resolve_admin_token(None, None, {ENV: ""}, "") is None        # set but empty: as unset


@pytest.mark.parametrize("text, match", [
    ("", "is empty"), ("  \n", "is empty"), ("two words", "without spaces"), ("tökén", "printable ASCII"),
], ids=["empty", "blank", "space", "non-ascii"])
def test_a_bad_token_file_is_a_config_error(tmp_path, text, match):
    with pytest.raises(ConfigError, match=match):
        resolve_admin_token(None, token_file(tmp_path, text), {}, "")


def test_both_flags_or_a_missing_file_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="not both"):
        resolve_admin_token(TOKEN, token_file(tmp_path), {}, "")
    with pytest.raises(ConfigError, match="cannot read the admin token file"):
        resolve_admin_token(None, str(tmp_path / "missing"), {}, "")


def test_the_flag_and_a_readable_file_warn(tmp_path):
    (warning,) = resolve_admin_token(TOKEN, None, {}, "").warnings
    assert "visible to every local user" in warning and TOKEN not in warning
    assert resolve_admin_token(None, token_file(tmp_path), {}, "").warnings == ()
    (warning,) = resolve_admin_token(None, token_file(tmp_path, mode=0o644), {}, "").warnings
    assert "readable by other users" in warning


def test_serve_prints_the_source_and_warnings_never_the_token(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    args = build_parser().parse_args(["serve", "--admin-token", TOKEN])
    assert _admin_token(args, load_config().auth) == TOKEN
    err = capsys.readouterr().err
    assert "warning: --admin-token is visible" in err and "from --admin-token" in err and TOKEN not in err


def test_the_config_names_the_token_file(tmp_path):
    config = tmp_path / "smartcache.toml"
    config.write_text(f'[auth]\nadmin_token_file = "{token_file(tmp_path)}"\n')
    assert load_config(config).auth.admin_token_file == str(tmp_path / "admin-token")
    config.write_text("[auth]\nadmin_token_file = 1\n")
    with pytest.raises(ConfigError, match="admin_token_file"):
        load_config(config)


@pytest.mark.parametrize("argv, env", [
    (["--admin-token-file", "MISSING"], {}),
    (["--admin-token", "a", "--admin-token-file", "FILE"], {}),
    ([], {ENV: "has a space"}),
], ids=["missing-file", "both-flags", "bad-env"])
def test_serve_refuses_a_bad_token_with_one_line_and_exit_2(tmp_path, capsys, monkeypatch, argv, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    argv = [{"MISSING": str(tmp_path / "missing"), "FILE": token_file(tmp_path)}.get(a, a) for a in argv]
    assert main(["serve", "--store", "memory", *argv]) == 2
    err = capsys.readouterr().err
    assert "smartcache: error:" in err and "Traceback" not in err


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def upstream_args() -> list[str]:
    # Nothing listens there, and nothing here asks it: the admin API never calls the engine.
    return ["--store", "memory", "--upstream", f"http://127.0.0.1:{free_port()}/v1"]


@pytest.mark.integration
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/cmdline")
@pytest.mark.parametrize("how", ["env", "file", "flag"])
def test_the_running_serve_needs_the_token_and_hides_it_unless_passed_as_a_flag(tmp_path, how):
    extra, env = upstream_args(), {}
    if how == "env":
        env[ENV] = TOKEN
    elif how == "file":
        extra += ["--admin-token-file", token_file(tmp_path)]
    else:       # the old way, still accepted: what the check below would catch
        extra += ["--admin-token", TOKEN]
    with serve(*extra, env=env) as base:
        shown = cmdline(base.proc.pid)
        assert "smartcache.cli serve" in shown                # the process is the one that serves
        assert (TOKEN in shown) == (how == "flag")
        assert httpx.get(base + "/admin/stats").status_code == 401
        wrong = httpx.get(base + "/admin/stats", headers={"authorization": "Bearer not-" + TOKEN})
        assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_admin_token"
        ok = httpx.get(base + "/admin/stats", headers={"authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200 and "timeline" in ok.json()
        assert httpx.get(base + "/dashboard").status_code == 200      # the page itself is open
    assert os.environ.get(ENV) != TOKEN         # the test's token went to the child only
