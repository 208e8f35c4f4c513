"""Where ``serve`` finds the admin token, without putting it where other local users can read it.

A command-line argument is world-readable (``ps``, ``/proc/PID/cmdline``) and stays in shell
history, so the token is read, in this order, from the first of:

    --admin-token TOKEN          still accepted, with a warning saying why not to
    --admin-token-file PATH      the file's content, surrounding whitespace stripped
    $SMARTCACHE_ADMIN_TOKEN      the environment (readable only by the same user and root)
    [auth] admin_token_file      the config's file, as --admin-token-file

Both flags at once is an error (which one was meant?). A flag over the environment is not:
it says so on stderr, naming the source, never the token.

    >>> resolve_admin_token(None, None, {"SMARTCACHE_ADMIN_TOKEN": "t0k3n"}, "").source
    '$SMARTCACHE_ADMIN_TOKEN'
    >>> resolve_admin_token(None, None, {}, "") is None
    True
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Mapping, NamedTuple

from smartcache.errors import ConfigError

ENV = "SMARTCACHE_ADMIN_TOKEN"
# It travels in an Authorization header: visible ASCII only, so it compares as sent.
_TOKEN = re.compile(r"[\x21-\x7e]+")


class AdminToken(NamedTuple):
    """The token and where it came from (the source is safe to print; the token is not)."""

    token: str
    source: str
    warnings: tuple[str, ...] = ()


def resolve_admin_token(flag: str | None, flag_file: str | None, environ: Mapping[str, str],
                        config_file: str) -> AdminToken | None:
    """The admin token from the first source that gives one (see the module docstring), or
    None when none does. Raises ConfigError for both flags, an unreadable or empty file, or a
    token with spaces or non-ASCII characters."""
    if flag is not None and flag_file is not None:
        raise ConfigError("give the admin token one way: --admin-token or --admin-token-file, not both")
    warnings: list[str] = []
    if flag is not None:
        warnings.append("--admin-token is visible to every local user (ps, /proc/PID/cmdline) and stays in "
                        f"shell history; prefer ${ENV} or --admin-token-file")
        found = AdminToken(_checked(flag, "--admin-token"), "--admin-token")
    elif flag_file is not None:
        found = _from_file(flag_file, "--admin-token-file", warnings)
    elif environ.get(ENV):
        found = AdminToken(_checked(environ[ENV], f"${ENV}"), f"${ENV}")
    elif config_file:
        found = _from_file(config_file, "[auth] admin_token_file", warnings)
    else:
        return None
    if found.source != f"${ENV}" and environ.get(ENV):
        warnings.append(f"${ENV} is set but {found.source} takes precedence")
    return found._replace(warnings=tuple(warnings))


def _from_file(path: str, what: str, warnings: list[str]) -> AdminToken:
    try:
        text = Path(path).read_text(encoding="utf-8")
        mode = os.stat(path).st_mode
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the admin token file {path} ({what}): {exc}") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        warnings.append(f"the admin token file {path} is readable by other users; chmod 600 it")
    return AdminToken(_checked(text.strip(), f"the admin token file {path}"), f"{what} {path}")


def _checked(token: str, what: str) -> str:
    if not token:
        raise ConfigError(f"{what} is empty: the admin token needs at least one character")
    if not _TOKEN.fullmatch(token):
        raise ConfigError(f"{what}: the admin token must be printable ASCII without spaces")
    return token
