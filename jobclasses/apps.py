from django.apps import AppConfig


class JobclassesConfig(AppConfig):
    name = "jobclasses"
    verbose_name = "Job classes"

    def ready(self) -> None:
        from jobclasses import tasks  # noqa: F401 - registers the tasks triggers send by name
        from jobclasses.kinds import register_config_hooks, register_jobclass_kinds

        register_jobclass_kinds()
        register_config_hooks()
