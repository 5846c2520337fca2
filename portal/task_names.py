"""The names of the shared machinery's Celery tasks: the decorators, the beat schedule and
every sender use these, so a task is sent by name and no module imports another's tasks."""

GARBAGE_COLLECT = "portal.tasks.garbage_collect"
COLLECT_DEPENDENTS = "portal.tasks.collect_dependents"
RELEASE_FOREGROUND_OWNERS = "portal.tasks.release_foreground_owners"
COMPACT_WATCH_HISTORY = "portal.tasks.compact_watch_history"
PROCESS_QUEUE = "portal.tasks.process_queue"
