from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "workflows"
    verbose_name = "Workflows"

    def ready(self) -> None:
        from portal.machinery import workqueue
        from workflows import tasks  # noqa: F401 - registers the tasks triggers send by name
        from workflows.kinds import register_workflow_kinds

        register_workflow_kinds()
        workqueue.register(tasks.QUEUE, tasks.reconcile_key)
