from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "workflows"

    def ready(self) -> None:
        from workflows.kinds import register_workflow_kinds

        register_workflow_kinds()
