"""Django settings, read through django-environ only.

The embedded default needs no server: SQLite and kombu's filesystem transport under
``KRUNTIMES_DATA_DIR``. Production sets ``DATABASE_URL`` and ``CELERY_BROKER_URL``.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from jobclasses import task_names as jobclass_tasks
from portal import task_names as portal_tasks
from portal.datadir import secret_key
from runtimed.protocol import CONTROL_QUEUE
from scheduling import task_names as scheduling_tasks
from workflows import task_names as workflow_tasks
from workspaces import task_names as workspace_tasks

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env(
    DEBUG=(bool, False),
    ALLOWED_HOSTS=(list, ["localhost", "127.0.0.1", "[::1]", "testserver"]),
    KRUNTIMES_CLUSTER=(str, "local"),
    KRUNTIMES_AUTHORIZER=(str, ""),
    KRUNTIMES_SAR_TIMEOUT_SECONDS=(float, 5.0),
    CELERY_POLLING_INTERVAL=(float, 0.05),
)
if (BASE_DIR / ".env").is_file():
    environ.Env.read_env(BASE_DIR / ".env")

# Nothing here creates a file: the entry points call portal.datadir.ensure_data_dir().
DATA_DIR = Path(env.str("KRUNTIMES_DATA_DIR", default=str(BASE_DIR / ".data"))).resolve()

DEBUG = env("DEBUG")
# A stable per-installation key for the embedded default, made (0600) on first use;
# production sets SECRET_KEY.
SECRET_KEY = env.str("SECRET_KEY", default="") or secret_key(
    Path(env.str("KRUNTIMES_SECRET_KEY_FILE", default=str(DATA_DIR / "secret_key")))
)
ALLOWED_HOSTS = env("ALLOWED_HOSTS")
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

KRUNTIMES_CLUSTER = env("KRUNTIMES_CLUSTER")
if KRUNTIMES_CLUSTER not in ("local", "kubernetes"):
    raise environ.ImproperlyConfigured("KRUNTIMES_CLUSTER must be 'local' or 'kubernetes'")
# Which authorizer answers review(): local RBAC by default, SubjectAccessReview in a cluster.
KRUNTIMES_AUTHORIZER = env("KRUNTIMES_AUTHORIZER") or (
    "subjectaccessreview" if KRUNTIMES_CLUSTER == "kubernetes" else "rbac"
)
KRUNTIMES_SAR_TIMEOUT_SECONDS = env("KRUNTIMES_SAR_TIMEOUT_SECONDS")
# ServiceAccount (JWT) bearer tokens authenticated by the cluster's TokenReview
# (portal/auth/tokenreview.py); on by default in a cluster.
KRUNTIMES_TOKEN_REVIEW = env.bool(
    "KRUNTIMES_TOKEN_REVIEW", default=KRUNTIMES_CLUSTER == "kubernetes"
)
# Audiences the tokens must be meant for (TokenReview spec.audiences); empty: the API server's.
KRUNTIMES_TOKEN_AUDIENCES = env.list("KRUNTIMES_TOKEN_AUDIENCES", default=[])
# How long a TokenReview answer is reused (kube-apiserver caches webhook token answers too).
KRUNTIMES_TOKEN_REVIEW_CACHE_SECONDS = env.float(
    "KRUNTIMES_TOKEN_REVIEW_CACHE_SECONDS", default=10.0
)
KRUNTIMES_TOKEN_REVIEW_TIMEOUT_SECONDS = env.float(
    "KRUNTIMES_TOKEN_REVIEW_TIMEOUT_SECONDS", default=5.0
)
# The workflow controller's ServiceAccount as the cluster's API server names it in the
# admission webhook's userInfo (e.g. system:serviceaccount:<ns>:<name>); "" trusts only the
# portal's own system:kruntimes:workflow-controller (workspaces/ownership.py).
KRUNTIMES_WORKFLOW_CONTROLLER_USERNAME = env.str(
    "KRUNTIMES_WORKFLOW_CONTROLLER_USERNAME", default=""
)
# Optional kubeconfig path for the kubernetes client; in-cluster config is used when absent.
KRUNTIMES_KUBECONFIG = env.str("KUBECONFIG", default="")

# The key the function gateway shows runtimed's dataplane (``scheduling.dataplane.key``);
# empty: derived from SECRET_KEY, so every process of one installation agrees on it.
KRUNTIMES_DATAPLANE_KEY = env.str("KRUNTIMES_DATAPLANE_KEY", default="")
# Where function Runs are invoked (status.endpoint.url's base, an https:// URL); empty: the
# URL ``manage.py up --tls`` serves, and no endpoint is published without TLS.
KRUNTIMES_GATEWAY_URL = env.str("KRUNTIMES_GATEWAY_URL", default="")
# the PEM CA published as status.endpoint.caBundle (up --tls: the portal's own CA)
KRUNTIMES_GATEWAY_CA_FILE = env.str("KRUNTIMES_GATEWAY_CA_FILE", default="")

INSTALLED_APPS = [
    "portal.overview.site.PortalAdminConfig",  # django.contrib.admin with the overview
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc served from the package, never a CDN
    "django_celery_beat",
    "portal.apps.PortalConfig",
    "scheduling",
    "workspaces",
    "workflows",
    "jobclasses",
]
# ``manage.py bench``: a checkout's app, not the wheel's (see benchmarks/__init__.py)
if importlib.util.find_spec("benchmarks") is not None:
    INSTALLED_APPS.append("benchmarks")
INSTALLED_APPS += env.list("KRUNTIMES_EXTRA_APPS", default=[])

MIDDLEWARE = [
    # a chunked body (no Content-Length) is read before anything else looks at the body
    "portal.machinery.chunked.chunked_body_middleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # every path no route matched answers a Status 404, not HTML (the console keeps its page)
    "portal.machinery.not_found.status_not_found_middleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

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
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'portal.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's, without the varchar_pattern_ops twin of each indexed text column (see there)
    DATABASES["default"]["ENGINE"] = "portal.db.postgresql"
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL and a busy timeout let web, worker and beat share one SQLite file.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            # take the write lock at BEGIN: a read transaction upgraded to a write fails at once
            # ("database is locked") instead of waiting out the busy timeout
            "transaction_mode": "IMMEDIATE",
        }
    )
# Keep connections open across requests and Celery tasks: a new PostgreSQL connection per
# task cost more than the task itself. Health checks drop a connection that went bad.
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=300))
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
# The ASGI web process (portal.asgi sets KRUNTIMES_ASGI) runs each request's sync code on a
# thread of its own, so a kept connection per thread would leak and concurrency would be
# bounded by nothing: on PostgreSQL it takes its connections from one pool per process
# instead (requests wait up to 30 s for one beyond KRUNTIMES_DB_POOL_SIZE).
if env.bool("KRUNTIMES_ASGI", default=False) and "postgresql" in DATABASES["default"]["ENGINE"]:
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": env.int("KRUNTIMES_DB_POOL_SIZE", default=10),
        "timeout": 30,
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # first: a JWT-shaped bearer token is the cluster's to judge (off unless configured)
        "portal.auth.tokenreview.TokenReviewAuthentication",
        "portal.auth.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "portal.machinery.yaml.StrictJSONParser",
        "portal.machinery.yaml.YAMLParser",
    ],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "portal.machinery.yaml.YAMLRenderer",
    ],
    "EXCEPTION_HANDLER": "portal.machinery.views.status_exception_handler",
    # a body without Content-Type is JSON, as kube-apiserver reads it
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "portal.machinery.negotiation.KubernetesContentNegotiation",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # Kubernetes negotiates by Accept header only; ?format= would shadow real query params.
    "URL_FORMAT_OVERRIDE": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "kruntimes portal API",
    "DESCRIPTION": "Kubernetes-shaped API for Runtimes, Runs, workspaces, workflows and jobs.",
    "VERSION": "v1alpha1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # the front-end bundles from drf-spectacular-sidecar's static files (works offline)
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Celery: the embedded default is kombu's filesystem transport, which needs absolute folders.
BROKER_DIR = DATA_DIR / "broker"
# "localhost" only names the host: the filesystem transport keeps messages in BROKER_DIR.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://localhost/")
# The folders ensure_data_dir() makes: the data directory, static files, the broker's folders.
KRUNTIMES_DATA_FOLDERS = [DATA_DIR, STATIC_ROOT]
if CELERY_BROKER_URL.startswith("filesystem://"):
    KRUNTIMES_DATA_FOLDERS += [BROKER_DIR / sub for sub in ("queue", "processed", "control")]
    # kombu's transport with atomic writes and claims (see runtimed/fstransport.py)
    CELERY_BROKER_TRANSPORT = "runtimed.fstransport:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "store_processed": False,
        "control_folder": str(BROKER_DIR / "control"),
        "polling_interval": env("CELERY_POLLING_INTERVAL"),
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
# The control plane's own queue (runtimed reports there too: runtimed.protocol).
CELERY_TASK_DEFAULT_QUEUE = CONTROL_QUEUE
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# How often the level-triggered beat passes heal whatever an event missed.
KRUNTIMES_RECONCILE_INTERVAL_SECONDS = env.float(
    "KRUNTIMES_RECONCILE_INTERVAL_SECONDS", default=10.0
)
KRUNTIMES_GC_BATCH_SIZE = env.int("KRUNTIMES_GC_BATCH_SIZE", default=500)
# manage.py up's beat: WARNING keeps its "Sending due task" INFO lines (a few a second) out of
# the terminal; INFO (or up --verbose-beat) shows them.
KRUNTIMES_BEAT_LOG_LEVEL = env.str("KRUNTIMES_BEAT_LOG_LEVEL", default="WARNING")
# Events: kept an hour after they were last seen (kube-apiserver's --event-ttl), and per
# (source, object) a burst of 25 then one per 5 minutes (client-go's spam filter).
KRUNTIMES_EVENT_TTL_SECONDS = env.float("KRUNTIMES_EVENT_TTL_SECONDS", default=3600.0)
KRUNTIMES_EVENT_BURST = env.int("KRUNTIMES_EVENT_BURST", default=25)
KRUNTIMES_EVENT_REFILL_SECONDS = env.float("KRUNTIMES_EVENT_REFILL_SECONDS", default=300.0)
KRUNTIMES_EVENT_INSTANCE = env.str("KRUNTIMES_EVENT_INSTANCE", default=socket.gethostname())
# A batch writer's Events (the scheduler's, one per bound Run) are written on a thread of
# their own ("thread"), or in the caller ("inline": SQLite has one writer at a time anyway).
KRUNTIMES_EVENT_WRITER = env.str(
    "KRUNTIMES_EVENT_WRITER",
    default="thread" if "postgresql" in DATABASES["default"]["ENGINE"] else "inline",
)
if KRUNTIMES_EVENT_WRITER not in ("thread", "inline"):
    raise ImproperlyConfigured("KRUNTIMES_EVENT_WRITER is thread or inline")
# Admin change lists count exactly up to this many rows; above, PostgreSQL's planner estimate.
KRUNTIMES_ADMIN_EXACT_COUNT_LIMIT = env.int("KRUNTIMES_ADMIN_EXACT_COUNT_LIMIT", default=10000)
# The scheduler's Filter stops after this percentage of a Runtime's pods were found feasible
# (never fewer than KRUNTIMES_SCHEDULER_MIN_PODS_TO_SCORE; 100: every pod; 0: kube-scheduler's
# adaptive 50%-less-1%-per-125-pods) and Score ranks only those. Candidates are walked least
# loaded first, so a small sample already holds the pods the full ranking would prefer.
KRUNTIMES_SCHEDULER_PERCENTAGE_OF_PODS_TO_SCORE = env.int(
    "KRUNTIMES_SCHEDULER_PERCENTAGE_OF_PODS_TO_SCORE", default=5
)
KRUNTIMES_SCHEDULER_MIN_PODS_TO_SCORE = env.int("KRUNTIMES_SCHEDULER_MIN_PODS_TO_SCORE", default=50)
# A scheduler keeps pod usage across its passes, updated from the Run watch events, so a pass
# reads what changed, not every active Run; it is rebuilt from the rows at least every
# RESYNC seconds, when the history it needs is compacted, and after a bind found a pod fuller
# than it said (the bind re-reads usage under the pod lock: a stale cache can cost a conflict,
# never an over-full pod). Off: each pass sums every active Run.
KRUNTIMES_SCHEDULER_USAGE_CACHE = env.bool("KRUNTIMES_SCHEDULER_USAGE_CACHE", default=True)
KRUNTIMES_SCHEDULER_CACHE_RESYNC_SECONDS = env.float(
    "KRUNTIMES_SCHEDULER_CACHE_RESYNC_SECONDS", default=300.0
)
# After each rebuild the cache collects the process's garbage once and freezes what is left
# out of the collector's generations (gc.freeze): at 50,000 active Runs a full collection
# walking the cache's entries was a 100 ms pause in one pass of every few dozen.
KRUNTIMES_SCHEDULER_GC_FREEZE = env.bool("KRUNTIMES_SCHEDULER_GC_FREEZE", default=True)
# How long a stopped Runtime Pod (and ``manage.py up`` on Ctrl-C/SIGTERM) waits for running
# steps to finish and report before it is killed; runtimed itself stops steps 5 s earlier.
KRUNTIMES_POD_TERMINATION_GRACE_SECONDS = env.float(
    "KRUNTIMES_POD_TERMINATION_GRACE_SECONDS", default=30.0
)
# The Kubernetes API level served (``/version``'s major.minor): the shapes follow Kubernetes
# 1.37's API (discovery, SelfSubjectReview, version.Info with the emulation fields), and
# kubectl warns about a server more than one minor from its own.
KRUNTIMES_KUBERNETES_VERSION = env.str("KRUNTIMES_KUBERNETES_VERSION", default="1.37")
# The largest request body the API and the admin accept (413 beyond; Kubernetes' 3 MiB).
KRUNTIMES_MAX_REQUEST_BYTES = env.int("KRUNTIMES_MAX_REQUEST_BYTES", default=3 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = KRUNTIMES_MAX_REQUEST_BYTES
# /metrics needs `get` on the non-resource URL /metrics (as kube-apiserver's); true opens it
# to anyone, for a Prometheus scraper that sends no token.
KRUNTIMES_METRICS_ANONYMOUS = env.bool("KRUNTIMES_METRICS_ANONYMOUS", default=False)
# ``manage.py up``'s web server processes (gunicorn with uvicorn workers).
KRUNTIMES_WEB_WORKERS = env.int("KRUNTIMES_WEB_WORKERS", default=4)
# Long-lived responses (log follows) each hold a thread while they wait for output: at most
# this many per web process and per user, so ordinary requests keep answering (429 beyond).
KRUNTIMES_MAX_STREAMS = env.int("KRUNTIMES_MAX_STREAMS", default=8)
KRUNTIMES_MAX_STREAMS_PER_USER = env.int("KRUNTIMES_MAX_STREAMS_PER_USER", default=4)
# Stored log bytes per Run attempt; the oldest output is truncated beyond it.
KRUNTIMES_RUN_LOG_LIMIT_BYTES = env.int("KRUNTIMES_RUN_LOG_LIMIT_BYTES", default=4 * 1024 * 1024)
# The filesystem ArtifactStore's volumes: one directory per claim name (the local provider's
# stand-in for the shared PVC; the kubernetes provider mounts the claims there).
KRUNTIMES_ARTIFACT_VOLUMES = Path(
    env.str("KRUNTIMES_ARTIFACT_VOLUMES", default=str(DATA_DIR / "artifact-volumes"))
).resolve()
# Artifact limits runtimed enforces (bytes): per artifact (a directory counts packed) and per Run.
KRUNTIMES_ARTIFACT_MAX_BYTES = env.int("KRUNTIMES_ARTIFACT_MAX_BYTES", default=1 << 30)
KRUNTIMES_RUN_ARTIFACT_MAX_BYTES = env.int("KRUNTIMES_RUN_ARTIFACT_MAX_BYTES", default=10 << 30)
# The job-local PersistentWorkspace the workflow controller makes for each steps job: removed
# this long after its last Run ended (the job's artifacts outlive it in the artifact store).
KRUNTIMES_WORKFLOW_WORKSPACE_TTL_SECONDS = env.int(
    "KRUNTIMES_WORKFLOW_WORKSPACE_TTL_SECONDS", default=600
)
# The kubernetes provider (KRUNTIMES_CLUSTER=kubernetes, manage.py cluster-provider): the
# runtimed image of a Runtime without spec.daemonImage; the broker URL runtimed gets, as a key
# of a Secret in each Runtime's namespace or (no Secret named) inline; every API call's
# timeout; how long one pod watch stays open; how often Deployments are ensured.
KRUNTIMES_RUNTIMED_IMAGE = env.str(
    "KRUNTIMES_RUNTIMED_IMAGE", default="ghcr.io/kruntimes/kruntimes-portal:latest"
)
KRUNTIMES_RUNTIMED_BROKER_SECRET = env.str("KRUNTIMES_RUNTIMED_BROKER_SECRET", default="")
KRUNTIMES_RUNTIMED_BROKER_SECRET_KEY = env.str(
    "KRUNTIMES_RUNTIMED_BROKER_SECRET_KEY", default="CELERY_BROKER_URL"
)
KRUNTIMES_RUNTIMED_BROKER_URL = env.str("KRUNTIMES_RUNTIMED_BROKER_URL", default=CELERY_BROKER_URL)
KRUNTIMES_KUBE_REQUEST_TIMEOUT_SECONDS = env.float(
    "KRUNTIMES_KUBE_REQUEST_TIMEOUT_SECONDS", default=10.0
)
KRUNTIMES_KUBE_WATCH_SECONDS = env.int("KRUNTIMES_KUBE_WATCH_SECONDS", default=30)
KRUNTIMES_PROVIDER_SYNC_SECONDS = env.float("KRUNTIMES_PROVIDER_SYNC_SECONDS", default=5.0)
# the cluster provider acts only while holding this Lease (one leader among the replicas)
KRUNTIMES_PROVIDER_LEASE_NAME = env.str(
    "KRUNTIMES_PROVIDER_LEASE_NAME", default="kruntimes-cluster-provider"
)
KRUNTIMES_PROVIDER_LEASE_NAMESPACE = env.str(
    "KRUNTIMES_PROVIDER_LEASE_NAMESPACE", default=os.environ.get("POD_NAMESPACE", "default")
)
KRUNTIMES_PROVIDER_LEASE_SECONDS = env.int("KRUNTIMES_PROVIDER_LEASE_SECONDS", default=15)
# How often a running Job's execution is observed (the beat pass heals a lost poll).
KRUNTIMES_JOB_POLL_SECONDS = env.float("KRUNTIMES_JOB_POLL_SECONDS", default=2.0)
# Every call of the OpenSandbox adapter to its backend (each HTTP request, the health probe,
# the wait for a new sandbox's execd) is bounded by this many seconds.
KRUNTIMES_OPENSANDBOX_TIMEOUT_SECONDS = env.float(
    "KRUNTIMES_OPENSANDBOX_TIMEOUT_SECONDS", default=10.0
)
# The Kubernetes Job adapter: a dry run prints each Job's batch Job and every call into the
# Job's log instead of making them; every call is bounded by the request timeout; a pod not
# Ready within the pod timeout fails the execution.
KRUNTIMES_KUBERNETES_DRY_RUN = env.bool("KRUNTIMES_KUBERNETES_DRY_RUN", default=False)
KRUNTIMES_KUBERNETES_REQUEST_TIMEOUT_SECONDS = env.float(
    "KRUNTIMES_KUBERNETES_REQUEST_TIMEOUT_SECONDS", default=30.0
)
KRUNTIMES_KUBERNETES_POD_READY_TIMEOUT_SECONDS = env.float(
    "KRUNTIMES_KUBERNETES_POD_READY_TIMEOUT_SECONDS", default=600.0
)
# Fernet keys (comma-separated) encrypting Secret data in the database: the first encrypts,
# all decrypt (rotate by putting a new key first, then manage.py rotate_secret_keys); empty:
# stored plain.
KRUNTIMES_SECRET_ENCRYPTION_KEYS = env.list("KRUNTIMES_SECRET_ENCRYPTION_KEYS", default=[])
# Watches: the history kept for resuming (older versions answer 410 Expired and clients
# relist), how often each web process reads it, bookmark spacing, and the longest watch.
KRUNTIMES_WATCH_HISTORY_SECONDS = env.float("KRUNTIMES_WATCH_HISTORY_SECONDS", default=900.0)
KRUNTIMES_WATCH_HISTORY_MIN_EVENTS = env.int("KRUNTIMES_WATCH_HISTORY_MIN_EVENTS", default=1000)
# watch events one compaction pass deletes at most (it runs again at once while more are due)
KRUNTIMES_WATCH_COMPACT_BATCH = env.int("KRUNTIMES_WATCH_COMPACT_BATCH", default=2000)
KRUNTIMES_WATCH_POLL_SECONDS = env.float("KRUNTIMES_WATCH_POLL_SECONDS", default=0.05)
KRUNTIMES_WATCH_BOOKMARK_SECONDS = env.float("KRUNTIMES_WATCH_BOOKMARK_SECONDS", default=10.0)
KRUNTIMES_WATCH_MAX_SECONDS = env.float("KRUNTIMES_WATCH_MAX_SECONDS", default=1800.0)
# Watches held open per web process and per user (429 beyond; they hold no thread under ASGI).
KRUNTIMES_MAX_WATCHES = env.int("KRUNTIMES_MAX_WATCHES", default=4096)
KRUNTIMES_MAX_WATCHES_PER_USER = env.int("KRUNTIMES_MAX_WATCHES_PER_USER", default=1024)
# Watches of one web process that open at once (their initial list and first database work);
# the others wait on the event loop, so opening many never stalls other requests. 0: no limit.
KRUNTIMES_WATCH_OPENINGS = env.int("KRUNTIMES_WATCH_OPENINGS", default=4)
# Beat's level-triggered passes (django-celery-beat syncs these rows into its tables).
CELERY_BEAT_SCHEDULE = {
    "garbage-collect": {
        "task": portal_tasks.GARBAGE_COLLECT,
        "schedule": KRUNTIMES_RECONCILE_INTERVAL_SECONDS,
        "options": {"queue": CONTROL_QUEUE, "expires": KRUNTIMES_RECONCILE_INTERVAL_SECONDS * 3},
    },
    "compact-watch-history": {
        "task": portal_tasks.COMPACT_WATCH_HISTORY,
        "schedule": 60.0,
        "options": {"queue": CONTROL_QUEUE, "expires": 120.0},
    },
    # Pods and Runs on a short beat: a lost pod fails its Runs within 30 s.
    "scheduling-reconcile": {
        "task": scheduling_tasks.RECONCILE,
        "schedule": 5.0,
        "options": {"queue": CONTROL_QUEUE, "expires": 15.0},
    },
    # PersistentWorkspace binding (a gone pod turns its workspaces Lost), use and cleanup.
    "workspaces-reconcile": {
        "task": workspace_tasks.RECONCILE,
        "schedule": 5.0,
        "options": {"queue": CONTROL_QUEUE, "expires": 15.0},
    },
    # WorkflowRuns: the controller's level-triggered pass (events start it at once).
    "workflows-reconcile": {
        "task": workflow_tasks.RECONCILE,
        "schedule": 5.0,
        "options": {"queue": CONTROL_QUEUE, "expires": 15.0},
    },
    # JobClasses' Accepted/Ready and finalizers, then every unfinished Job (its execution is
    # observed between the polls that follow a running Job every KRUNTIMES_JOB_POLL_SECONDS).
    "jobclasses-reconcile": {
        "task": jobclass_tasks.RECONCILE,
        "schedule": KRUNTIMES_RECONCILE_INTERVAL_SECONDS,
        "options": {"queue": CONTROL_QUEUE, "expires": KRUNTIMES_RECONCILE_INTERVAL_SECONDS * 3},
    },
    # ttlSecondsAfterFinished and the artifact-cleanup finalizer of deleted Runs.
    "scheduling-collect-runs": {
        "task": scheduling_tasks.COLLECT_RUNS,
        "schedule": KRUNTIMES_RECONCILE_INTERVAL_SECONDS,
        "options": {"queue": CONTROL_QUEUE, "expires": KRUNTIMES_RECONCILE_INTERVAL_SECONDS * 3},
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
