from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Cluster"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        # the Celery app every shared_task binds to (portal/__init__.py leaves it out so
        # plain subpackages such as portal.krt load without Celery)
        import portal.celery  # noqa: F401
        import portal.machinery.schema  # noqa: F401 - registers the OpenAPI extension
        import portal.tasks  # noqa: F401 - registers the tasks the store sends by name
        from portal.auth.default_roles import ensure_default_cluster_roles
        from portal.kinds import register_portal_kinds
        from portal.machinery import gc_queue, workqueue

        register_portal_kinds()
        workqueue.register(gc_queue.QUEUE, portal.tasks.collect_owner_key)
        post_migrate.connect(ensure_default_cluster_roles, sender=self)
