"""Django settings. Every value that varies by deployment comes from `ongrid_site.config.load()`."""

from datetime import timedelta as _timedelta

from django.core.exceptions import ImproperlyConfigured

from ongrid_site import config as _config
from ongrid_site.web_security import transport_settings

try:
    CONFIG = _config.load()
except _config.ConfigError as exc:
    raise ImproperlyConfigured(str(exc)) from None

BASE_DIR = _config.BASE_DIR
DEBUG = CONFIG.debug
SECRET_KEY = CONFIG.secret_key
ALLOWED_HOSTS = CONFIG.allowed_hosts
CSRF_TRUSTED_ORIGINS = CONFIG.csrf_trusted_origins
CONFIG.data_dir.mkdir(parents=True, exist_ok=True)

INSTALLED_APPS = [
    "daphne",
    "ongrid_site.apps.OngridAdminConfig",  # django.contrib.admin with Ongrid's site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "channels",
    "axes",
    "ops_app",
    "agents_app",
    "chat_app",
    "audit_app",
    "web_app",
    "evals_app",
    "incidents_app",
    "im_app",
    "django_celery_beat",
    "schedules_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "ongrid_site.web_security.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The browser's language (cookie set by the header switch, else Accept-Language); the user's
    # own setting then wins in web_app.languages.UserLanguageMiddleware (docs/i18n.md).
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "ops_app.estate.change_events.ChangeActorMiddleware",
    "web_app.timezones.ViewerTimezoneMiddleware",
    "web_app.languages.UserLanguageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes requires: turns a lockout into the login page with its message.
    "axes.middleware.AxesMiddleware",
]

# Every password check (our login page, the admin's, DRF's browsable API) goes through django-axes
# first: a username + client address with too many failures is locked out for a while.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = CONFIG.login_failure_limit
AXES_COOLOFF_TIME = _timedelta(minutes=CONFIG.login_lockout_minutes)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "ongrid_site.views.locked_out"
AXES_VERBOSE = False

ROOT_URLCONF = "ongrid_site.urls"
WSGI_APPLICATION = "ongrid_site.wsgi.application"
ASGI_APPLICATION = "ongrid_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "ops_app.context_processors.ongrid",
                "web_app.audit.context_processors.audit",
                "web_app.timezones.timezone_context",
                "django.template.context_processors.i18n",
            ],
        },
    },
]

DATABASES = {"default": CONFIG.database}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CHANNEL_LAYERS = CONFIG.channel_layers()
CACHES = CONFIG.caches()

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en"
# The interface's languages (docs/i18n.md says how to add one). English is the source language.
LANGUAGES = [
    ("en", "English"),
    ("es", "Español"),
    ("fr", "Français"),
    ("zh-hans", "简体中文"),
]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
# One way to write a time on every page, the admin's included (ongrid_site/formats/en/formats.py).
FORMAT_MODULE_PATH = ["ongrid_site.formats"]

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = CONFIG.static_root
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Lets daphne alone serve static files even before collectstatic has run.
WHITENOISE_USE_FINDERS = True

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "ops_app.tenancy.authentication.ApiTokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    # Error bodies always carry "error"; JSON bodies are capped and depth-limited (docs/security.md).
    "DEFAULT_RENDERER_CLASSES": [
        "ongrid_site.api_errors.ErrorJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PARSER_CLASSES": [
        "ops_app.core.jsonbody.LimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # Rates count per process unless REDIS_URL gives every process one shared cache.
    "DEFAULT_THROTTLE_CLASSES": [
        "ongrid_site.throttles.AnonThrottle",
        "ongrid_site.throttles.UserThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {"anon": CONFIG.api_anon_rate, "user": CONFIG.api_user_rate},
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Ongrid API",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Signed-in users only, for every view drf-spectacular serves (ongrid_site/api_docs.py).
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # `check --deploy` is about the deployment (.ci/run fails on any warning); schema lint is not.
    "ENABLE_DJANGO_DEPLOY_CHECK": False,
    # The docs page's assets come from the drf-spectacular-sidecar package: it works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Celery: the broker exists only in the scale-out shape. Without Redis every task runs eagerly
# in the calling process, so the embedded default needs no broker at all.
CELERY_BROKER_URL = CONFIG.redis_url or "memory://"
CELERY_RESULT_BACKEND = CONFIG.redis_url or "cache+memory://"
CELERY_TASK_ALWAYS_EAGER = not CONFIG.uses_redis
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis client timeouts, health checks and retries for the broker and the results (config.py).
globals().update(CONFIG.celery_transport_options())
CELERY_BEAT_SCHEDULE = {
    "reap-orphaned-sessions": {"task": "agents_app.reap_orphans", "schedule": 300.0},
    "purge-expired-audit-data": {"task": "audit_app.purge_audit", "schedule": 86400.0},
    # Claims and queues due schedule runs (docs/schedules.md); the claim makes double beats harmless.
    "fire-due-schedules": {"task": "schedules_app.tick", "schedule": 30.0},
    # Posts the IM answers queued while a chat platform was down (docs/im.md); rows are claimed.
    "redeliver-im-outbox": {"task": "im_app.redeliver", "schedule": 15.0},
    # Sends and retries the alert notifications (docs/alerts.md); rows are claimed.
    "drain-alert-notifications": {"task": "incidents_app.drain_notifications", "schedule": 15.0},
    # Writes findings and mirrored states back to the alert sources, with retries (docs/alerts.md).
    "drain-source-writebacks": {"task": "incidents_app.drain_writebacks", "schedule": 15.0},
    # Pulls the vault's Git repositories whose interval has passed (docs/knowledge.md); claimed.
    "sync-vault-repositories": {"task": "ops_app.sync_vault_repositories", "schedule": 60.0},
}
if CONFIG.k8s_changes_interval > 0:
    # Rollouts and ConfigMap changes of the organizations' clusters (docs/kubernetes.md).
    CELERY_BEAT_SCHEDULE["collect-cluster-changes"] = {
        "task": "ops_app.collect_cluster_changes",
        "schedule": CONFIG.k8s_changes_interval,
    }
# `celery -A ongrid_site beat` keeps its periodic tasks in the database (django-celery-beat), so
# they are listed, and can be paused, in the admin; the entries above are synced into it.
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"

# Outgoing e-mail (schedule deliveries). Without ONGRID_SMTP_HOST, messages go to the log.
if CONFIG.smtp_host:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_HOST = CONFIG.smtp_host
    EMAIL_PORT = CONFIG.smtp_port
    EMAIL_HOST_USER = CONFIG.smtp_user
    EMAIL_HOST_PASSWORD = CONFIG.smtp_password
    EMAIL_USE_SSL = CONFIG.smtp_ssl
    EMAIL_USE_TLS = CONFIG.smtp_starttls and not CONFIG.smtp_ssl
else:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
DEFAULT_FROM_EMAIL = CONFIG.email_from
EMAIL_TIMEOUT = 15

ONGRID_EXECUTOR = CONFIG.executor
# Fernet keys of every encrypted column (ops_app.core.encryption): the first encrypts, all decrypt.
ONGRID_ENCRYPTION_KEYS = CONFIG.encryption_keys

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        name: {"handlers": ["console"], "level": CONFIG.log_level, "propagate": False}
        for name in ("ongrid_site", "ops_app", "agents_app", "chat_app", "audit_app", "schedules_app")
    },
}

# Secure cookies, HSTS and the TLS proxy header (ONGRID_HTTPS, ONGRID_TLS_PROXY); see web_security.
globals().update(transport_settings(CONFIG))
