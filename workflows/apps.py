from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "workflows"
    verbose_name = "Workflows"

    def ready(self) -> None:
        from portal.machinery import workqueue
        from scheduling.signals import run_phase_changed
        from workflows import tasks  # noqa: F401 - registers the tasks triggers send by name
        from workflows.kinds import register_workflow_kinds
        from workflows.triggers import QUEUE, on_run_phase_changed

        register_workflow_kinds()
        workqueue.register(QUEUE, tasks.reconcile_key)
        run_phase_changed.connect(on_run_phase_changed, dispatch_uid="workflows.runs")
