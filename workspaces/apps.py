from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    verbose_name = "Workspaces"

    def ready(self) -> None:
        from scheduling.signals import runtime_pods_changed
        from workspaces import tasks  # noqa: F401 - registers the tasks triggers send by name
        from workspaces.kinds import register_workspace_kind
        from workspaces.runs import register_run_hooks
        from workspaces.triggers import on_pods_changed

        register_workspace_kind()
        register_run_hooks()
        runtime_pods_changed.connect(on_pods_changed, dispatch_uid="workspaces.pods")
