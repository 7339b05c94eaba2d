"""Settings for Rightsize, read from the environment (see .env.example).

With nothing set, the embedded default runs: SQLite under var/, a local-memory cache and
Celery tasks executed in-process. DATABASE_URL and REDIS_URL switch to PostgreSQL and Redis.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

from sizing_site.core.logconfig import logging_config
from sizing_site.env import env_bool, env_int, env_list, env_str, env_timezone, env_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

DEBUG = env_bool("DEBUG", True)
_INSECURE_DEV_KEY = "dev-only-insecure-key-set-SECRET_KEY-in-production"
SECRET_KEY = env_str("SECRET_KEY", _INSECURE_DEV_KEY)
if not DEBUG and SECRET_KEY == _INSECURE_DEV_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG=False")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served from static/ (no CDN)
    "django_htmx",
    "template_partials",
    "sizing_site.core",
    "sizing_site.tenancy",
    "simple_history",
    "import_export",
    "catalog",
    "pricing",
    "sizing_site.prices",
    "sizing_site.configurator",
    "sizing_site.explore",
    "sizing_site.sharing",
    "sizing_site.reports",
    "sizing_site.tokens",
    "sizing_site.fleet",
    "sizing_site.planner",
    "sizing_site.owncatalog",
    "axes",
    "csp",
]

MIDDLEWARE = [
    # First, so lines logged by every later middleware carry the request id.
    "sizing_site.core.request_id.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    # Before anything reads the path or query: a NUL byte or non-UTF-8 query is a 400.
    "sizing_site.guards.RequestGuardMiddleware",
    # Before anything reads a body (CSRF, sessions, views): one over its address's limit
    # is a 413, unread (sizing_site/body_limits.py).
    "sizing_site.body_limits.BodyLimitMiddleware",
    # Before any view reads a catalog row (catalog.sizing.cache).
    "sizing_site.core.catalog_version.CatalogVersionMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a lockout raised by the backend into a response.
    "axes.middleware.AxesMiddleware",
]

# django-axes first: it counts failed logins per username and address and refuses a locked
# one before the password is checked (both login pages go through authenticate()).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429
AXES_LOCKOUT_TEMPLATE = "registration/locked.html"
AXES_VERBOSE = False

# Django's form renderer, with the select and input widgets written in Python (the same
# HTML; sizing_site/core/form_renderer.py).
FORM_RENDERER = "sizing_site.core.form_renderer.FastWidgetRenderer"

ROOT_URLCONF = "sizing_site.urls"
WSGI_APPLICATION = "sizing_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "sizing_site.tenancy.context_processors.organizations",
            ],
            # After Django's own filters: its `floatformat` is replaced by the same filter
            # without Decimal and format look-ups per number (sizing_site/core/numbers.py).
            "builtins": ["sizing_site.core.templatetags.fast_numbers"],
        },
    }
]

VAR_DIR.mkdir(exist_ok=True)
DATABASE_URL = env_url(
    "DATABASE_URL",
    f"sqlite:///{VAR_DIR / 'rightsize.sqlite3'}",
    schemes=("sqlite", "postgres", "postgresql"),
)
# Persistent connections, checked before reuse so a database failover costs no request.
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=env_int("CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
CACHES: dict[str, dict[str, object]]
if REDIS_URL:
    env_url("REDIS_URL", REDIS_URL, schemes=("redis", "rediss"))
    # One connection pool per process, shared by every thread's cache client (redis_pool).
    _REDIS_OPTIONS = {"pool_class": "sizing_site.core.redis_pool.SharedConnectionPool"}
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "rightsize",
            "OPTIONS": _REDIS_OPTIONS,
        },
        # The pages' {% cache %} fragments: the same Redis, forgiving of its outages.
        "fragments": {
            "BACKEND": "sizing_site.core.fragment_cache.ForgivingRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "rightsize",
            "OPTIONS": _REDIS_OPTIONS,
        },
    }
else:
    # The sizing cache keeps one small entry per model and card (catalog.sizing.cache):
    # room for every pair of today's catalog (~120,000, a few hundred bytes each), where
    # the default of 300 entries would evict them as fast as they are made.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "OPTIONS": {"MAX_ENTRIES": 150_000},
        },
        "fragments": {"BACKEND": "sizing_site.core.fragment_cache.BatchingLocMemCache"},
    }

# Celery: JSON only, bounded run time; tasks opt in to acks_late only when idempotent.
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
# After a catalog edit, a Celery worker re-fills the sizing cache (catalog.tasks). With tasks
# run in-process (no REDIS_URL) that would make the admin's save wait, so pages fill it
# on first visit instead.
SIZING_WARM_AFTER_EDIT = env_bool("SIZING_WARM_AFTER_EDIT", bool(REDIS_URL))
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TASK_SOFT_TIME_LIMIT = 240
CELERY_TASK_TIME_LIMIT = 300
CELERY_TASK_ACKS_LATE = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    # Hourly at :17, off the top of the hour when cron jobs everywhere (and the providers'
    # APIs) peak; each price source then runs only when its own refresh_hours has passed.
    "refresh-due-prices": {
        "task": "pricing.tasks.refresh_due_prices",
        "schedule": crontab(minute=17),
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
LANGUAGES = [
    ("en", _("English")),
    ("de", _("German")),
    ("it", _("Italian")),
    ("zh-hans", _("Simplified Chinese")),
]
LOCALE_PATHS = [BASE_DIR / "sizing_site" / "locale"]
USE_I18N = True
# Numbers on pages are grouped in every language (1,425 / 1.425) and each language has one
# date pattern: sizing_site/formats/<locale>/formats.py. Numbers a machine reads back (form
# values, data-* attributes, URLs, JSON) are written with |unlocalize or {% localize off %}.
USE_THOUSAND_SEPARATOR = True
FORMAT_MODULE_PATH = ["sizing_site.formats"]
USE_TZ = True
TIME_ZONE = env_timezone("TIME_ZONE", "UTC")

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns on every request when it is missing
# Files served at the site's root by WhiteNoise: /favicon.ico for clients that ask for it
# without reading the page's <link rel="icon"> (admin pages, feeds, bookmarks).
WHITENOISE_ROOT = BASE_DIR / "static" / "root"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # API tokens first; the pages' own calls keep their session.
        "sizing_site.tokens.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Per user (session and tokens together) and per token; "600/min" style, from the env.
    "DEFAULT_THROTTLE_CLASSES": [
        "sizing_site.tokens.throttling.PerUserThrottle",
        "sizing_site.tokens.throttling.PerTokenThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "user": env_str("API_THROTTLE_USER", "600/min"),
        "token": env_str("API_THROTTLE_TOKEN", "600/min"),
    },
    # The proxies in front whose X-Forwarded-For entry names the client (throttles by
    # address); 0 trusts no header, so a client cannot pick the address it is counted as.
    "NUM_PROXIES": env_int("API_NUM_PROXIES", 0),
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "sizing_site.apikit.parsers.JsonBodyParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "sizing_site.apikit.openapi.AutoSchema",
    # One error shape for every API view: {"errors": {"<field>": ["message"]}}.
    "EXCEPTION_HANDLER": "sizing_site.apikit.errors.errors_shape",
}

# The work budget of the API's expensive calls (sizing_site/apikit/budget.py; docs/api.md, "Work
# budget"). A work unit is about one ordinary estimate (7 ms of one core): one request at
# most 500 (50 estimates with analysis, about 3.5 s), a user and a token each 3,000 a
# minute (a third of a core), one priced request in flight per user (so one member's
# scripts hold at most one core of the server; benchmarks/load.py abuse), 20 s of work each.
API_COST_PER_REQUEST = env_int("API_COST_PER_REQUEST", 500, minimum=1)
API_COST_PER_MINUTE_USER = env_int("API_COST_PER_MINUTE_USER", 3000, minimum=1)
API_COST_PER_MINUTE_TOKEN = env_int("API_COST_PER_MINUTE_TOKEN", 3000, minimum=1)
API_CONCURRENT_PER_USER = env_int("API_CONCURRENT_PER_USER", 1, minimum=1)
API_WORK_DEADLINE_S = env_int("API_WORK_DEADLINE_S", 20, minimum=1)
# Bad API tokens one address may send in a minute; then any token from it is a 429 until
# the minute is over (sizing_site/tokens/throttling.py).
API_TOKEN_FAILURE_LIMIT = env_int("API_TOKEN_FAILURE_LIMIT", 30, minimum=1)

# The OpenAPI schema at /api/v1/schema/ and its Swagger UI at /api/v1/docs/ (sizing_site/api/
# schema.py), for logged-in users; Swagger UI's files come from drf-spectacular-sidecar.
SPECTACULAR_SETTINGS = {
    "TITLE": "Rightsize API",
    "DESCRIPTION": "Size open-weight LLMs on hardware: memory, speed and cost. "
    'Errors have one shape, the field named: `{"errors": {"ctx": ["message", ...]}}`.',
    "VERSION": "1",
    "SCHEMA_PATH_PREFIX": "/api/v1/",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Weights' format and a quant format's family share their choices: one enum.
    "ENUM_NAME_OVERRIDES": {"WeightsFamilyEnum": "catalog.models.WeightsFamily"},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "sizing_site.apikit.openapi.closed_request_bodies",
        "sizing_site.sharing.api.one_expiry",
        "sizing_site.planner.api.plan_bodies",
    ],
}

# Request bodies. Each address has its limit (sizing_site/body_limits.py, a 413 before
# anything reads the body); these are Django's own caps behind it. Form fields (not files)
# up to the largest a page takes, a pasted config.json of 1 MB that a browser may send as up
# to 4 bytes a character; an upload up to 2.5 MB (a config.json, a price feed) stays in
# memory, a larger one (a GGUF header) goes to a temporary file.
DATA_UPLOAD_MAX_MEMORY_SIZE = 4 * 1_000_000 + 64 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440

# Production hardening; each can be relaxed explicitly (e.g. TLS terminated elsewhere).
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
X_FRAME_OPTIONS = "DENY"
# Probes inside a private network speak plain http to the health checks.
SECURE_REDIRECT_EXEMPT = [r"^health/"]

# A strict Content-Security-Policy: the pages load scripts, styles and fonts from
# static/ only (vendored, no CDN) and run no inline script.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# Outbound fetches (pricing.fetchers, the feed form): only http(s) to public addresses,
# unless a host is listed here (a feed on the intranet, say).
OUTBOUND_ALLOWED_HOSTS = env_list("OUTBOUND_ALLOWED_HOSTS")
OUTBOUND_MAX_REDIRECTS = env_int("OUTBOUND_MAX_REDIRECTS", 3)
OUTBOUND_DEADLINE_S = env_int("OUTBOUND_DEADLINE_S", 60, minimum=1)
OUTBOUND_MAX_BYTES = env_int("OUTBOUND_MAX_BYTES", 32 * 1024 * 1024, minimum=1024)
# The Hugging Face Hub that `import_hf` and the own catalog's import read (catalog/hub.py),
# passed to huggingface_hub explicitly: the library reads its own HF_ENDPOINT only once,
# when first imported. A mirror or a test's local fake Hub goes here; the token is the
# library's own HF_TOKEN.
HF_ENDPOINT = env_url("HF_ENDPOINT", "https://huggingface.co", schemes=("https", "http"))
# Error tracking: a Sentry-compatible DSN; empty leaves it off.
ERROR_TRACKING_DSN = env_str("ERROR_TRACKING_DSN")

# LOG_FORMAT is "text" (default) or "json"; every line carries the request id.
LOGGING = logging_config(
    log_format=env_str("LOG_FORMAT", "text"), level=env_str("LOG_LEVEL", "INFO")
)

# Cloud prices (pricing app). A price not confirmed for this long is shown as stale.
PRICES_STALE_AFTER_HOURS = env_int("PRICES_STALE_AFTER_HOURS", 72, minimum=1)
# Keys for the price sources that need one; a source stays disabled until its key is set.
RUNPOD_API_KEY = env_str("RUNPOD_API_KEY")
LAMBDA_API_KEY = env_str("LAMBDA_API_KEY")
VAST_API_KEY = env_str("VAST_API_KEY")
