from django.apps import AppConfig


class JobclassesConfig(AppConfig):
    name = "jobclasses"
    verbose_name = "Job classes"

    def ready(self) -> None:
        from jobclasses import tasks, triggers
        from jobclasses.kinds import register_config_hooks, register_jobclass_kinds
        from portal.machinery import workqueue

        register_jobclass_kinds()
        register_config_hooks()
        workqueue.register(triggers.JOBS, tasks.reconcile_job_key)
        workqueue.register(triggers.CLASSES, tasks.reconcile_class_key)
