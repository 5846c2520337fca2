from django.apps import AppConfig


class RuntimedConfig(AppConfig):
    """runtimed has no models: it is the per-Runtime-Pod worker and never touches the database."""

    name = "runtimed"
