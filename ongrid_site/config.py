"""Every environment variable Ongrid reads, parsed in one place.

settings.py is a thin consumer of `load()`; keeping the parsing pure (a mapping in, a frozen
value out) lets the tests check both deployment shapes without re-importing Django settings.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import dj_database_url
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ops_app.core.egress import AllowList
from ops_app.core.kubeconfig import in_cluster_url

BASE_DIR = Path(__file__).resolve().parent.parent

TRUE_WORDS = {"1", "true", "yes", "on"}
RATE_PATTERN = re.compile(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)")

# List prices (USD per million tokens) of common models, for the audit pages' cost estimate.
DEFAULT_MODEL_PRICES = {
    "gpt-4o-mini": {"input": 0.15, "output": 0.60},
    "gpt-4o": {"input": 2.50, "output": 10.00},
    "gpt-4.1": {"input": 2.00, "output": 8.00},
    "gpt-4.1-mini": {"input": 0.40, "output": 1.60},
    "gpt-4.1-nano": {"input": 0.10, "output": 0.40},
}


# Every Redis client Ongrid makes (channel layer, Celery broker and results). Reads may block up to
# 15 s, three times channels_redis' 5 s BZPOPMIN, so an idle socket's blocking read never times out
# first; a connect gives up after 3 s; a connection idle for 10 s is pinged before it is used; a
# command that fails on a dropped connection (ConnectionError, TimeoutError) is retried once on a
# new one (redis-py's retry_on_timeout also covers connection errors).
REDIS_CLIENT_OPTIONS = {
    "socket_timeout": 15.0,
    "socket_connect_timeout": 3.0,
    "socket_keepalive": True,
    "health_check_interval": 10,
    "retry_on_timeout": True,
}


class ConfigError(Exception):
    """Raised when the environment describes a configuration Ongrid must refuse to start with."""


@dataclass(frozen=True)
class Config:
    debug: bool
    secret_key: str
    allowed_hosts: list[str]
    csrf_trusted_origins: list[str]
    data_dir: Path
    database: dict
    redis_url: str | None
    llm: str
    openai_api_key: str | None
    openai_base_url: str | None
    model: str
    agents_dirs: list[Path]
    agents_reload: str  # watch | poll | off: hot reload of the mounted directories (docs/personas.md)
    vault_dir: Path
    prometheus_url: str | None
    loki_url: str | None
    tempo_url: str | None
    alertmanager_url: str | None
    log_level: str
    llm_timeout: float = 60.0
    llm_max_retries: int = 3
    # The longest Retry-After of a 429/503 that is waited out; a longer one fails the call at once.
    llm_retry_after_max: float = 60.0
    tool_result_limit: int = 16000
    # Deferred tool schemas (docs/kernel.md "Deferred tools and ToolSearch"): an agent with more
    # tools than `deferred_tools_above` is sent its core tools' schemas and a ToolSearch tool.
    tool_search: bool = True
    deferred_tools_above: int = 15
    # Tokens (≈ 4 characters each) of a chat's history sent per model call before its earlier turns
    # are summarised (docs/chat.md "Long chats"); 0: no summaries, the last 50 messages.
    history_tokens: int = 16000
    metrics_token: str | None = None
    # USD per million tokens, {"model": {"input": x, "output": y}}; audit pages estimate cost with it.
    model_prices: dict = field(default_factory=lambda: dict(DEFAULT_MODEL_PRICES))
    audit_retention_days: int = 0  # 0 keeps audit data forever
    review_timeout: float = 60.0
    approval_timeout: float = 300.0
    restartable_services: tuple[str, ...] = ("nginx", "apache2", "haproxy")
    # The Ongrid host itself as a device (transport "local"): off unless the operator says so.
    allow_local_device: bool = False
    # Incidents matching their organization's policy are investigated on their own (docs/investigations.md).
    auto_investigate: bool = True
    # MCP servers over stdio run a command on the Ongrid host: platform staff opt in.
    mcp_allow_stdio: bool = False
    # Fernet keys for secrets at rest: the first encrypts, all decrypt (ops_app.core.encryption).
    encryption_keys: tuple[str, ...] = ()
    encryption_keys_derived: bool = False  # True: no ONGRID_ENCRYPTION_KEYS, derived from SECRET_KEY
    # The web surface (docs/security.md, "The web surface").
    https: bool = False  # browsers reach the site over https: Secure cookies, HSTS
    tls_proxy: bool = False  # a TLS proxy in front sets X-Forwarded-Proto; trust it, redirect http
    hsts_seconds: int = 31536000
    metrics_public: bool = False
    login_failure_limit: int = 5
    login_lockout_minutes: float = 15.0
    api_anon_rate: str | None = "30/minute"
    api_user_rate: str | None = "600/minute"
    # The evaluation suite's optional LLM judge (docs/evals.md): its model, endpoint and key.
    eval_judge_model: str | None = None
    eval_judge_base_url: str | None = None
    eval_judge_api_key: str | None = None
    # Where people reach this instance: links in IM replies (transcripts, account linking).
    public_url: str = "http://127.0.0.1:8000"
    public_url_set: bool = False  # ONGRID_PUBLIC_URL given: the admin may show absolute webhook URLs
    # Schedules (docs/schedules.md): the embedded scheduler's tick, and outgoing e-mail.
    scheduler_interval: float = 30.0  # seconds; 0 turns the embedded scheduler off
    # Seconds between polls of the clusters for rollouts and ConfigMap changes; 0 turns it off.
    k8s_changes_interval: float = 60.0
    smtp_host: str | None = None  # unset: e-mail goes to the server log (console backend)
    smtp_port: int = 587
    smtp_user: str = ""
    smtp_password: str = ""
    smtp_starttls: bool = True
    smtp_ssl: bool = False
    email_from: str = "ongrid@localhost"
    # Turns one worker process carries at once (docs/runtime.md, "Many turns per worker process").
    turns_per_process: int = 200
    # Toolset packages beside the built-in ones, importable dotted names (docs/extending.md).
    toolsets: tuple[str, ...] = ()
    # The organization (slug) whose clusters may use Ongrid's own service account when it runs in a
    # Kubernetes pod (docs/kubernetes.md, "In-cluster"); empty: none may.
    kubernetes_in_cluster: str = ""
    # Where outbound requests for organizations may go besides public addresses (docs/security.md,
    # "Egress"): ONGRID_EGRESS_ALLOW plus the hosts of the deployment's own URLs.
    egress_allow: AllowList = field(default_factory=AllowList)
    # OpenTelemetry traces (docs/observability.md): off unless an OTLP/HTTP endpoint is set. The
    # endpoint is the full URL spans are posted to; headers (an API key) are never logged.
    otel_traces_endpoint: str | None = None
    otel_headers: dict = field(default_factory=dict, repr=False)
    otel_service_name: str = "ongrid"
    otel_resource_attributes: dict = field(default_factory=dict)
    otel_capture_content: bool = False  # message bodies, tool arguments and results on spans
    # A link from the audit pages to a trace UI: `{trace_id}` is replaced by the trace id.
    trace_url_template: str = ""
    # Where collectstatic writes and whitenoise serves from (default ONGRID_DATA_DIR/staticfiles):
    # the container image bakes them outside the data volume, which would otherwise hide them.
    static_root: Path | None = None

    @property
    def uses_redis(self) -> bool:
        return bool(self.redis_url)

    @property
    def executor(self) -> str:
        """Where chat turns run: in the ASGI process, or on Celery workers when Redis is there."""
        return "celery" if self.redis_url else "inline"

    def channel_layers(self) -> dict:
        """The Redis layer's client must outwait channels_redis' own 5 s blocking read (BZPOPMIN):
        with redis-py's default 5 s socket timeout the two meet and an idle websocket dies with
        a TimeoutError. Connecting stays quick, and a pooled connection Redis dropped (a restart)
        is pinged before reuse and a failed command retried once on a new connection."""
        if self.redis_url:
            host = {"address": self.redis_url, **REDIS_CLIENT_OPTIONS}
            return {
                "default": {
                    "BACKEND": "channels_redis.core.RedisChannelLayer",
                    "CONFIG": {"hosts": [host], "prefix": "ongrid"},
                }
            }
        return {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

    def celery_transport_options(self) -> dict:
        """Celery's broker and result-backend Redis clients, bounded the same way as the layer's:
        a short connect, reads that outlast kombu's 1 s BRPOP, stale connections pinged first."""
        if not self.redis_url:
            return {}
        options = dict(REDIS_CLIENT_OPTIONS)
        return {
            "CELERY_BROKER_TRANSPORT_OPTIONS": options,
            # Celery's default (20 retries a second apart) held a message sent while Redis is down
            # for 20 s before the turn could end as failed; a restart is over in these ~4 s.
            "CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS": {
                "retry_policy": {
                    "max_retries": 5,
                    "interval_start": 0,
                    "interval_step": 0.5,
                    "interval_max": 1,
                }
            },
            "CELERY_REDIS_SOCKET_TIMEOUT": options["socket_timeout"],
            "CELERY_REDIS_SOCKET_CONNECT_TIMEOUT": options["socket_connect_timeout"],
            "CELERY_REDIS_RETRY_ON_TIMEOUT": True,
            "CELERY_REDIS_SOCKET_KEEPALIVE": True,
            "CELERY_REDIS_BACKEND_HEALTH_CHECK_INTERVAL": options["health_check_interval"],
            "CELERY_BROKER_CONNECTION_RETRY": True,
            "CELERY_BROKER_CONNECTION_MAX_RETRIES": None,  # a worker waits out a Redis outage
        }

    def caches(self) -> dict:
        """Redis when there is one, so every process counts API throttles together."""
        if self.redis_url:
            return {
                "default": {
                    "BACKEND": "django.core.cache.backends.redis.RedisCache",
                    "LOCATION": self.redis_url,
                    "KEY_PREFIX": "ongrid-cache",
                    # Short timeouts: while Redis is down a throttle check gives up quickly and
                    # lets the request through (ongrid_site/throttles.py) instead of hanging it.
                    "OPTIONS": {"socket_connect_timeout": 1.0, "socket_timeout": 1.0},
                }
            }
        return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


def _flag(env: Mapping[str, str], name: str, default: bool = False) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in TRUE_WORDS


def _list(env: Mapping[str, str], name: str, default: str, sep: str = ",") -> list[str]:
    return [item.strip() for item in env.get(name, default).split(sep) if item.strip()]


def _optional(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _otel_traces_endpoint(env: Mapping[str, str]) -> str | None:
    """The OTLP/HTTP URL spans go to, as the OpenTelemetry specification derives it: the
    signal-specific variable as given, else the base endpoint plus `/v1/traces`. None: tracing off
    (also when OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none says so)."""
    if _flag(env, "OTEL_SDK_DISABLED") or env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    specific = _optional(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if specific:
        return specific
    base = _optional(env, "OTEL_EXPORTER_OTLP_ENDPOINT")
    return f"{base.rstrip('/')}/v1/traces" if base else None


def _key_values(env: Mapping[str, str], name: str) -> dict:
    """`key1=value1,key2=value2` (the OTel format of headers and resource attributes), values
    percent-decoded; a malformed entry is refused rather than silently dropped."""
    pairs = {}
    for item in _list(env, name, ""):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            # The entry itself is not quoted back: a header's value may be a credential.
            raise ConfigError(f"{name}: expected key=value pairs separated by commas")
        pairs[unquote(key.strip())] = unquote(value.strip())
    return pairs


def _database(env: Mapping[str, str], data_dir: Path) -> dict:
    url = _optional(env, "DATABASE_URL")
    if not url:
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(data_dir / "ongrid.sqlite3"),
            # WAL lets the ASGI process read while a turn writes. synchronous=NORMAL: in WAL mode a
            # commit no longer waits for an fsync (270 → 15 µs an insert here, a turn makes ~60);
            # a killed process loses nothing, a power cut may lose the last commits, never the
            # file's consistency (README, the embedded default).
            # IMMEDIATE: a write transaction takes the write lock up front and waits for it (timeout),
            # instead of failing with "database is locked" when two writers upgrade at once.
            "OPTIONS": {
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
            },
        }
    db = dj_database_url.parse(url, conn_max_age=0, conn_health_checks=True)
    if db["ENGINE"] == "django.db.backends.postgresql":
        options = db.setdefault("OPTIONS", {})
        pool_size = int(_number(env, "ONGRID_DB_POOL_SIZE", 20, int, 0))
        if pool_size:
            # Django's native pool (psycopg_pool): turns borrow a connection per database call from
            # any thread (ops_app.core.async_db) and a waiting request holds none, so the pool bounds
            # how many database calls run at once, not how many turns (docs/runtime.md,
            # "Executors"). With CONN_HEALTH_CHECKS Django has the pool test a connection as it
            # leaves the pool, so one the server dropped (restart, pg_terminate_backend) is replaced
            # instead of used. `timeout`: how long a call waits for a free connection before it
            # fails (the API answers 503 then); calls last milliseconds, so a long wait means the
            # database is stuck, and failing soon is kinder than 30 s of silence.
            options["pool"] = {
                "min_size": min(2, pool_size),
                "max_size": pool_size,
                "timeout": _number(env, "ONGRID_DB_POOL_TIMEOUT", 10.0, float, 0.1),
            }
    return db


def _llm(env: Mapping[str, str]) -> str:
    choice = (env.get("ONGRID_LLM") or "").strip().lower()
    if choice and choice not in {"openai", "offline"}:
        raise ConfigError(f"ONGRID_LLM must be 'openai' or 'offline', not {choice!r}.")
    if choice:
        return choice
    return "openai" if _optional(env, "OPENAI_API_KEY") else "offline"


AGENTS_RELOAD_MODES = ("watch", "poll", "off")


def _agents_reload(env: Mapping[str, str]) -> str:
    """How each process notices edits under ONGRID_AGENTS_DIRS: file-system events (`watch`), a
    periodic scan (`poll`, for network or container mounts that send no events) or not at all."""
    choice = (env.get("ONGRID_AGENTS_RELOAD") or "watch").strip().lower()
    if choice not in AGENTS_RELOAD_MODES:
        raise ConfigError(f"ONGRID_AGENTS_RELOAD must be 'watch', 'poll' or 'off', not {choice!r}.")
    return choice


def _number(
    env: Mapping[str, str], name: str, default: float, kind: type = float, minimum: float = 0
) -> float:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, not {raw!r}.") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, not {raw!r}.")
    return value


def _model_prices(env: Mapping[str, str]) -> dict:
    """ONGRID_MODEL_PRICES replaces the default table; a malformed table stops startup, loudly."""
    raw = (env.get("ONGRID_MODEL_PRICES") or "").strip()
    if not raw:
        return dict(DEFAULT_MODEL_PRICES)
    problem = (
        'ONGRID_MODEL_PRICES must be a JSON object like {"gpt-4o-mini": {"input": 0.15, "output": 0.6}} '
        "(USD per million tokens)"
    )
    try:
        table = json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"{problem}; it is not valid JSON ({exc}).") from None
    if not isinstance(table, dict):
        raise ConfigError(f"{problem}.")
    prices = {}
    for model, price in table.items():
        valid = isinstance(price, dict) and all(
            isinstance(price.get(key), int | float)
            and not isinstance(price.get(key), bool)
            and price[key] >= 0
            for key in ("input", "output")
        )
        if not valid:
            raise ConfigError(f"{problem}; the entry for {model!r} is {price!r}.")
        prices[str(model)] = {"input": float(price["input"]), "output": float(price["output"])}
    return prices


# In ONGRID_ENCRYPTION_KEYS, this word stands for the key derived from SECRET_KEY (the default key),
# so an instance that started without its own keys can rotate to them: "<new key>,from-secret-key".
DERIVED_KEY_WORD = "from-secret-key"


def derive_encryption_key(secret_key: str) -> str:
    """A Fernet key derived from SECRET_KEY (HKDF-SHA256): the default when no keys are configured."""
    raw = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"ongrid-secrets-at-rest", info=b"fernet key v1"
    ).derive(secret_key.encode())
    return base64.urlsafe_b64encode(raw).decode()


def _encryption_keys(env: Mapping[str, str], secret_key: str) -> tuple[tuple[str, ...], bool]:
    """ONGRID_ENCRYPTION_KEYS: comma-separated Fernet keys, newest first. Unset: one derived key."""
    entries = _list(env, "ONGRID_ENCRYPTION_KEYS", "")
    if not entries:
        return (derive_encryption_key(secret_key),), True
    keys = []
    for position, entry in enumerate(entries, start=1):
        if entry == DERIVED_KEY_WORD:
            keys.append(derive_encryption_key(secret_key))
            continue
        try:
            valid = len(base64.urlsafe_b64decode(entry.encode())) == 32
        except (binascii.Error, ValueError):
            valid = False
        if not valid:
            raise ConfigError(
                f"ONGRID_ENCRYPTION_KEYS: entry {position} is not a Fernet key (32 bytes, url-safe "
                "base64; make one with `manage.py ongrid_rotate_secrets --generate-key`)."
            )
        keys.append(entry)
    return tuple(dict.fromkeys(keys)), False


def _rate(env: Mapping[str, str], name: str, default: str) -> str | None:
    """A DRF throttle rate like `600/minute`; `off` disables that throttle."""
    raw = (env.get(name) or "").strip().lower() or default
    if raw in {"off", "none", "0"}:
        return None
    if not RATE_PATTERN.fullmatch(raw):
        raise ConfigError(f"{name} must look like 600/minute (second, minute, hour, day) or off: {raw!r}.")
    return raw


DOTTED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _toolsets(env: Mapping[str, str]) -> tuple[str, ...]:
    packages = _list(env, "ONGRID_TOOLSETS", "")
    bad = [name for name in packages if not DOTTED_NAME.match(name)]
    if bad:
        raise ConfigError(
            f"ONGRID_TOOLSETS must list importable package names (like acme.toolsets.jira); not {bad[0]!r}"
        )
    return tuple(packages)


# The URLs platform staff set in the environment: their hosts are theirs to reach (the demo's local
# Prometheus, an in-cluster model server), so the egress policy lets each through on its port.
DEPLOYMENT_URLS = (
    "PROMETHEUS_URL",
    "LOKI_URL",
    "TEMPO_URL",
    "ALERTMANAGER_URL",
    "OPENAI_BASE_URL",
    "ONGRID_EVAL_JUDGE_BASE_URL",
)


def _egress_allow(env: Mapping[str, str]) -> AllowList:
    """ONGRID_EGRESS_ALLOW (hosts, host:port, addresses, networks) and the deployment's URLs."""
    try:
        allow = AllowList.parse(_list(env, "ONGRID_EGRESS_ALLOW", ""))
    except ValueError as exc:
        raise ConfigError(
            f"ONGRID_EGRESS_ALLOW: {exc} (e.g. prometheus.monitoring:9090,10.20.0.0/16)"
        ) from None
    for name in DEPLOYMENT_URLS + ("ONGRID_KUBERNETES_IN_CLUSTER",):
        if name == "ONGRID_KUBERNETES_IN_CLUSTER":  # the API server of the pod's own cluster
            parts = urlsplit(in_cluster_url(env) if env.get(name, "").strip() else "")
        else:
            parts = urlsplit(_optional(env, name) or "")
        if not parts.hostname:
            continue
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        try:
            allow |= AllowList.parse([f"{host}:{parts.port or (443 if parts.scheme == 'https' else 80)}"])
        except ValueError:
            raise ConfigError(f"{name} is not a valid URL: {env[name]!r}.") from None
    return allow


def load(env: Mapping[str, str] | None = None) -> Config:
    """Build the configuration from `env` (default: the process environment)."""
    env = os.environ if env is None else env
    debug = _flag(env, "DEBUG")
    secret_key = env.get("SECRET_KEY", "")
    if not secret_key:
        if not debug:
            raise ConfigError(
                "SECRET_KEY is not set. Set SECRET_KEY to a long random string, or set DEBUG=1 "
                "for a development-only instance (bin/start does this for you)."
            )
        secret_key = "ongrid-insecure-development-key"
    data_dir = Path(env.get("ONGRID_DATA_DIR") or BASE_DIR / "var").resolve()
    hosts = _list(env, "ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
    encryption_keys, keys_derived = _encryption_keys(env, secret_key)
    return Config(
        debug=debug,
        secret_key=secret_key,
        allowed_hosts=hosts,
        csrf_trusted_origins=_list(env, "CSRF_TRUSTED_ORIGINS", ""),
        data_dir=data_dir,
        database=_database(env, data_dir),
        redis_url=_optional(env, "REDIS_URL"),
        llm=_llm(env),
        openai_api_key=_optional(env, "OPENAI_API_KEY"),
        openai_base_url=_optional(env, "OPENAI_BASE_URL"),
        model=env.get("ONGRID_MODEL") or "gpt-4o-mini",
        agents_dirs=[Path(p) for p in _list(env, "ONGRID_AGENTS_DIRS", "", sep=":")],
        agents_reload=_agents_reload(env),
        vault_dir=Path(env.get("ONGRID_VAULT_DIR") or BASE_DIR / "vault").resolve(),
        prometheus_url=_optional(env, "PROMETHEUS_URL"),
        loki_url=_optional(env, "LOKI_URL"),
        tempo_url=_optional(env, "TEMPO_URL"),
        alertmanager_url=_optional(env, "ALERTMANAGER_URL"),
        log_level=(env.get("ONGRID_LOG_LEVEL") or "INFO").upper(),
        llm_timeout=_number(env, "ONGRID_LLM_TIMEOUT", 60.0, float, 1),
        llm_max_retries=int(_number(env, "ONGRID_LLM_MAX_RETRIES", 3, int, 0)),
        llm_retry_after_max=_number(env, "ONGRID_LLM_RETRY_AFTER_MAX", 60.0, float, 0),
        tool_result_limit=int(_number(env, "ONGRID_TOOL_RESULT_LIMIT", 16000, int, 200)),
        tool_search=_flag(env, "ONGRID_TOOL_SEARCH", default=True),
        deferred_tools_above=int(_number(env, "ONGRID_DEFERRED_TOOLS_ABOVE", 15, int, 0)),
        history_tokens=int(_number(env, "ONGRID_HISTORY_TOKENS", 16000, int, 0)),
        metrics_token=_optional(env, "ONGRID_METRICS_TOKEN"),
        model_prices=_model_prices(env),
        audit_retention_days=int(_number(env, "ONGRID_AUDIT_RETENTION_DAYS", 0, int, 0)),
        review_timeout=_number(env, "ONGRID_REVIEW_TIMEOUT", 60.0, float, 1),
        approval_timeout=_number(env, "ONGRID_APPROVAL_TIMEOUT", 300.0, float, 1),
        restartable_services=tuple(_list(env, "ONGRID_RESTARTABLE_SERVICES", "nginx,apache2,haproxy")),
        allow_local_device=_flag(env, "ONGRID_ALLOW_LOCAL_DEVICE"),
        auto_investigate=_flag(env, "ONGRID_AUTO_INVESTIGATE", default=True),
        mcp_allow_stdio=_flag(env, "ONGRID_MCP_ALLOW_STDIO"),
        encryption_keys=encryption_keys,
        encryption_keys_derived=keys_derived,
        https=_flag(env, "ONGRID_HTTPS", default=not debug),
        tls_proxy=_flag(env, "ONGRID_TLS_PROXY"),
        hsts_seconds=int(_number(env, "ONGRID_HSTS_SECONDS", 31536000, int, 0)),
        metrics_public=_flag(env, "ONGRID_METRICS_PUBLIC"),
        login_failure_limit=int(_number(env, "ONGRID_LOGIN_FAILURE_LIMIT", 5, int, 1)),
        login_lockout_minutes=_number(env, "ONGRID_LOGIN_LOCKOUT_MINUTES", 15.0, float, 1),
        api_anon_rate=_rate(env, "ONGRID_API_ANON_RATE", "30/minute"),
        api_user_rate=_rate(env, "ONGRID_API_USER_RATE", "600/minute"),
        eval_judge_model=_optional(env, "ONGRID_EVAL_JUDGE_MODEL"),
        eval_judge_base_url=_optional(env, "ONGRID_EVAL_JUDGE_BASE_URL"),
        eval_judge_api_key=_optional(env, "ONGRID_EVAL_JUDGE_API_KEY"),
        public_url=(env.get("ONGRID_PUBLIC_URL") or "http://127.0.0.1:8000").rstrip("/"),
        public_url_set=bool(env.get("ONGRID_PUBLIC_URL")),
        scheduler_interval=_number(env, "ONGRID_SCHEDULER_INTERVAL", 30.0, float, 0),
        k8s_changes_interval=_number(env, "ONGRID_K8S_CHANGES_INTERVAL", 60.0, float, 0),
        smtp_host=_optional(env, "ONGRID_SMTP_HOST"),
        smtp_port=int(_number(env, "ONGRID_SMTP_PORT", 587, int, 1)),
        smtp_user=env.get("ONGRID_SMTP_USER", ""),
        smtp_password=env.get("ONGRID_SMTP_PASSWORD", ""),
        smtp_starttls=_flag(env, "ONGRID_SMTP_STARTTLS", default=True),
        smtp_ssl=_flag(env, "ONGRID_SMTP_SSL"),
        email_from=env.get("ONGRID_EMAIL_FROM") or "ongrid@localhost",
        turns_per_process=int(_number(env, "ONGRID_TURNS_PER_PROCESS", 200, int, 1)),
        toolsets=_toolsets(env),
        kubernetes_in_cluster=env.get("ONGRID_KUBERNETES_IN_CLUSTER", "").strip(),
        egress_allow=_egress_allow(env),
        otel_traces_endpoint=_otel_traces_endpoint(env),
        otel_headers=_key_values(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
        or _key_values(env, "OTEL_EXPORTER_OTLP_HEADERS"),
        otel_service_name=env.get("OTEL_SERVICE_NAME", "").strip() or "ongrid",
        otel_resource_attributes=_key_values(env, "OTEL_RESOURCE_ATTRIBUTES"),
        otel_capture_content=_flag(env, "ONGRID_OTEL_CAPTURE_CONTENT"),
        trace_url_template=env.get("ONGRID_TRACE_URL_TEMPLATE", "").strip(),
        static_root=Path(env.get("ONGRID_STATIC_ROOT") or data_dir / "staticfiles").resolve(),
    )
