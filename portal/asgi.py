"""The ASGI application ``manage.py up`` serves (gunicorn with uvicorn workers): a long-lived
response (a log follow, a watch) waits on the event loop instead of holding a server thread,
watches open a few at a time (``portal.machinery.watch_gate``), and function invocations
take the gateway's own short path (``scheduling.gateway``)."""

import os

from django.core.asgi import get_asgi_application

from portal.datadir import ensure_data_dir
from portal.settle import settle

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ.setdefault("KRUNTIMES_ASGI", "1")  # the settings take database connections from a pool
ensure_data_dir()
django_application = get_asgi_application()

from portal.machinery.watch_gate import WatchGate  # noqa: E402 - needs the apps loaded
from scheduling.gateway.app import InvokeGateway  # noqa: E402 - needs the apps loaded

# function invocations are served before Django (scheduling.gateway); the rest goes on
application = InvokeGateway(WatchGate(django_application))
settle()  # what the process loaded stays out of the collector's full passes
