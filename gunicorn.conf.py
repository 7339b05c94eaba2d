"""gunicorn configuration for `make serve`, the Procfile and compose.yaml.

Every value comes from an environment variable, with the default shown. Read with
`gunicorn -c gunicorn.conf.py sizing_site.wsgi`; `gunicorn --print-config` lists the result.

Database connections: with CONN_MAX_AGE > 0 Django keeps one connection per thread, so
the web tier holds at most workers x (threads + api_threads) connections to PostgreSQL.
The defaults cap that at 8 x (4 + 2) = 48 (2 x 6 = 12 on one core). PostgreSQL allows 100
by default, 3 of them kept for superusers; the Celery worker adds its concurrency
(CELERY_CONCURRENCY, default 2) and beat none, so 48 + 2 + a few manage.py or psql
sessions stay under 97. Start-up fails when workers x (threads + api_threads) exceeds
DB_CONNECTION_BUDGET (default 64): raise PostgreSQL's max_connections before raising that.
"""

from __future__ import annotations

import os


def _int(name: str, default: int) -> int:
    # Not sizing_site.env.env_int: gunicorn reads this file before --chdir puts the project
    # on sys.path, and a SystemExit (not ImproperlyConfigured) stops it without a traceback.
    raw = os.environ.get(name, "")
    try:
        value = int(raw) if raw else default
    except ValueError:
        raise SystemExit(f"{name} must be an integer, got {raw!r}") from None
    if value < 0:
        raise SystemExit(f"{name} must not be negative, got {value}")
    return value


# Loopback by default: put a TLS-terminating proxy in front; compose sets 0.0.0.0:8000
# inside its own network. Not PORT: honcho sets PORT for every process it starts.
bind = [os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")]

# Processes: 2 per core (one computes while the other waits on the database), at most 8.
# The estimator is CPU-bound Python, so more processes than that only queue for a core.
workers = _int("GUNICORN_WORKERS", min(2 * (os.cpu_count() or 1), 8))
# Threads per process (gthread): they overlap database and Redis waits, not computation.
threads = _int("GUNICORN_THREADS", 4)
# Besides them, API requests (/api/) have a pool of their own of this many threads per
# process (sizing_site/core/gunicorn_worker.py; 0: one pool for everything), so that API
# calls waiting for a thread never hold up the pages and the health checks.
api_threads = _int("GUNICORN_API_THREADS", 2)
# Our gthread subclass (sizing_site/core/gunicorn_worker.py): a request's headers are
# gathered in the event loop, so a client that sends half a request and stalls holds a
# connection slot, not a thread. It is dropped after `keepalive` seconds of silence or
# GUNICORN_REQUEST_HEAD_DEADLINE seconds in all (default 20); a stalled body read gives
# up after GUNICORN_CLIENT_TIMEOUT seconds (default 10).
worker_class = "sizing_site.core.gunicorn_worker.BoundedThreadWorker"

_budget = _int("DB_CONNECTION_BUDGET", 64)
if workers * (threads + api_threads) > _budget:
    raise SystemExit(
        f"GUNICORN_WORKERS x (GUNICORN_THREADS + GUNICORN_API_THREADS) = "
        f"{workers * (threads + api_threads)} database connections, over "
        f"DB_CONNECTION_BUDGET={_budget} (see gunicorn.conf.py)"
    )

# Open connections per process, idle keep-alive ones included; past it the process stops
# accepting and new connections wait in the listen queue (backlog), then are refused.
worker_connections = _int("GUNICORN_WORKER_CONNECTIONS", 250)
backlog = _int("GUNICORN_BACKLOG", 512)

# A worker whose main loop is silent this long is killed and replaced. With threads this
# does not bound a slow view (the loop keeps beating): a page time limit is the proxy's.
timeout = _int("GUNICORN_TIMEOUT", 30)
# On SIGTERM (deploy, honcho stop) requests in flight get this long to finish.
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT", 30)
# Idle seconds a kept-alive connection stays open: long enough for a page and its assets,
# and a little longer than a proxy's upstream keep-alive is usually set to.
keepalive = _int("GUNICORN_KEEPALIVE", 5)

# Recycle a process after this many requests (plus up to the jitter, so that the processes
# do not all restart at once): bounds the damage of any slow memory growth.
max_requests = _int("GUNICORN_MAX_REQUESTS", 2000)
max_requests_jitter = _int("GUNICORN_MAX_REQUESTS_JITTER", 200)

# Request size limits. The longest legitimate URL (the compare page with its columns) is
# well under 2 KiB; headers are cookies plus a few browser headers.
limit_request_line = _int("GUNICORN_LIMIT_REQUEST_LINE", 4094)
limit_request_fields = _int("GUNICORN_LIMIT_REQUEST_FIELDS", 50)
limit_request_field_size = _int("GUNICORN_LIMIT_REQUEST_FIELD_SIZE", 8190)

# Django logs one line per request with its request id (sizing_site.core.request_id), so
# gunicorn's own access log stays off unless asked for ("-" for stdout). Its error log
# goes to stderr, gunicorn's default.
accesslog = os.environ.get("GUNICORN_ACCESSLOG") or None
loglevel = os.environ.get("GUNICORN_LOGLEVEL", "info")
# Heartbeat files in memory, not on a disk that may stall (and in containers, on overlayfs).
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
# X-Forwarded-* are trusted from these proxy addresses only.
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
proc_name = "rightsize"

# glibc gives each thread that allocates under contention a malloc arena of its own (up to
# 8 per core), and memory freed into one arena is kept for that arena: with gthread
# workers a process grows with its thread count, not with what it holds. Each worker
# allows GUNICORN_MALLOC_ARENA_MAX arenas (default 2; 0 leaves glibc's default), set
# right after the fork, before its threads start. Python's own small-object allocator
# is unaffected; what the arenas serve is larger buffers (query results, pickles,
# rendered pages).
malloc_arena_max = _int("GUNICORN_MALLOC_ARENA_MAX", 2)


def post_fork(server: object, worker: object) -> None:
    """Cap the worker's malloc arenas (mallopt M_ARENA_MAX); a libc without mallopt
    (musl, macOS) is left as it is."""
    if not malloc_arena_max:
        return
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-8, malloc_arena_max)  # M_ARENA_MAX in glibc's malloc.h
    except (OSError, AttributeError):
        return
