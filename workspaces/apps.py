from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    verbose_name = "Workspaces"

    def ready(self) -> None:
        from portal.machinery import workqueue
        from workspaces import tasks  # noqa: F401 - registers the tasks triggers send by name
        from workspaces.kinds import register_workspace_kind
        from workspaces.runs import register_run_hooks
        from workspaces.triggers import QUEUE

        register_workspace_kind()
        register_run_hooks()
        workqueue.register(QUEUE, tasks.reconcile_namespace)
