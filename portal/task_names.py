"""The names of the shared machinery's Celery tasks: the decorators, the beat schedule and
every sender use these, so a task is sent by name and no module imports another's tasks."""

GARBAGE_COLLECT = "portal.tasks.garbage_collect"
COMPACT_WATCH_HISTORY = "portal.tasks.compact_watch_history"
PROCESS_QUEUE = "portal.tasks.process_queue"
