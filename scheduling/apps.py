from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    name = "scheduling"

    def ready(self) -> None:
        from scheduling import tasks  # noqa: F401 - registers the tasks triggers send by name
        from scheduling.kinds import register_scheduling_kinds

        register_scheduling_kinds()
        from scheduling.run_events import on_run_phase_changed
        from scheduling.signals import run_phase_changed

        run_phase_changed.connect(on_run_phase_changed, dispatch_uid="scheduling.run_events")
