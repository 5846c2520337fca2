from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Cluster"

    def ready(self) -> None:
        import portal.machinery.schema  # noqa: F401 - registers the OpenAPI extension
        import portal.tasks  # noqa: F401 - registers the tasks the store sends by name
        from portal.kinds import register_portal_kinds

        register_portal_kinds()
