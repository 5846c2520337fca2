from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Cluster"

    def ready(self) -> None:
        from portal.kinds import register_portal_kinds

        register_portal_kinds()
