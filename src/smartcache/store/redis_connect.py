"""How the Redis store connects: one server by URL, or the primary that a set of Sentinels names.

    client = connect(RedisTarget(url="redis://127.0.0.1:6379/0"))
    client = connect(RedisTarget(sentinels=(("127.0.0.1", 26379), ...), service="smartcache"))

With Sentinels, redis-py's ``Sentinel(...).master_for(service)`` asks them for the primary
before each new connection and drops idle connections when the answer changes, so after a
failover the next call reaches the promoted replica without a gateway restart.

Two settings are about faults, not features:

* A failed call is retried once, at once. redis-py 8 retries ten times with exponential
  backoff by default: against a server that is down, every store call of a request then
  waited seconds before failing, and the request with it. One immediate retry is what a
  *stale* pooled connection needs (a server restarted or failed over closed it; the retry
  takes a fresh one); a server that is really down fails the call in milliseconds, and
  GuardedStore's backoff (fail at once, probe again later) takes it from there.
* Connecting gives up after ``CONNECT_TIMEOUT_S``: a host that drops packets must not hold a
  request for the whole read timeout before the cache can fail open.
"""

from __future__ import annotations

from dataclasses import dataclass

from smartcache.errors import ConfigError

CONNECT_TIMEOUT_S = 1.0
READ_TIMEOUT_S = 5.0        # a KNN query on a large index under load stays well inside it
RETRIES = 1


@dataclass(frozen=True)
class RedisTarget:
    """Where the store's Redis is: ``url``, or ``sentinels`` and the ``service`` they monitor."""

    url: str = ""
    sentinels: tuple[tuple[str, int], ...] = ()
    service: str = ""

    def __post_init__(self) -> None:
        if self.sentinels and not self.service:
            raise ConfigError("Redis Sentinel needs the service name the sentinels monitor ([store] service)")
        if not self.sentinels and not self.url:
            raise ConfigError("the redis store needs a url or sentinels")

    def describe(self) -> str:
        if self.sentinels:
            return f"service {self.service!r} of sentinels {','.join(f'{h}:{p}' for h, p in self.sentinels)}"
        return self.url


def parse_sentinels(value: str | list[str] | tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    """``"h1:26379,h2:26379"`` or ``["h1:26379", ...]`` -> ((h1, 26379), ...); a malformed one is a ConfigError.

    >>> parse_sentinels("127.0.0.1:26379, 10.0.0.2:26380")
    (('127.0.0.1', 26379), ('10.0.0.2', 26380))
    """
    items = value.split(",") if isinstance(value, str) else list(value)
    out = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"a sentinel is HOST:PORT, not {item!r}")
        out.append((host.strip("[]"), int(port)))
    return tuple(out)


def _retry():
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return Retry(NoBackoff(), RETRIES)


def connect(target: RedisTarget):
    """A redis-py client for ``target`` (RESP2: FT.SEARCH then replies as the flat list the store reads).
    Nothing is sent yet: the store's first call connects."""
    import redis

    options = dict(socket_timeout=READ_TIMEOUT_S, socket_connect_timeout=CONNECT_TIMEOUT_S, protocol=2,
                   retry=_retry())
    if not target.sentinels:
        return redis.Redis.from_url(target.url, **options)
    from redis.sentinel import Sentinel

    # The sentinels themselves get the same short timeouts and single retry: a dead sentinel is
    # skipped for the next one in milliseconds, not after ten backed-off retries.
    sentinel = Sentinel(list(target.sentinels), sentinel_kwargs=dict(options, protocol=2), **options)
    return sentinel.master_for(target.service)
