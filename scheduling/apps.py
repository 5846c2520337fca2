from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    name = "scheduling"

    def ready(self) -> None:
        from scheduling import tasks  # noqa: F401 - registers the tasks triggers send by name
        from scheduling.kinds import register_scheduling_kinds

        register_scheduling_kinds()
