"""The portal's Django project. The Celery app (``portal.celery``) is not imported here:
Django loads it first thing in ``PortalConfig.ready`` (so ``shared_task`` binds to it in
every Django process), ``celery -A portal`` finds it as ``portal.celery.app``, and a process
that only needs a plain subpackage (``krt``, the laptop CLI) does not pay ~0.3 s for Celery."""

from typing import Any

__all__ = ("celery_app",)


def __getattr__(name: str) -> Any:
    if name == "celery_app":
        from .celery import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
