from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    name = "scheduling"

    def ready(self) -> None:
        from portal.machinery import workqueue
        from scheduling import tasks  # registers the tasks triggers send by name
        from scheduling.kinds import register_scheduling_kinds
        from scheduling.triggers import CLEANUP_QUEUE, PASS_LEASE, QUEUE

        register_scheduling_kinds()
        workqueue.register(QUEUE, tasks.schedule_pending, lease=PASS_LEASE)
        workqueue.register(CLEANUP_QUEUE, tasks.clean_up_run)
