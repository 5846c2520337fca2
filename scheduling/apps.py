from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    name = "scheduling"

    def ready(self) -> None:
        from scheduling.kinds import register_scheduling_kinds

        register_scheduling_kinds()
