"""Test settings: the real settings plus a small test-only kind (``Widget``) for the machinery.

Worker and beat processes started by integration tests use these settings too, with
``KRUNTIMES_TEST_EAGER=0`` and ``KRUNTIMES_TEST_DB_NAME`` naming the test database.
"""

import os

from portal.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.testapp"]  # noqa: F405
CELERY_TASK_ALWAYS_EAGER = os.environ.get("KRUNTIMES_TEST_EAGER", "1") == "1"
CELERY_TASK_EAGER_PROPAGATES = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

_db = DATABASES["default"]  # noqa: F405
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # a file, not memory, so worker processes started by tests see the same database
    _db["TEST"] = {"NAME": str(DATA_DIR / f"test-{os.getpid()}.sqlite3")}  # noqa: F405
if os.environ.get("KRUNTIMES_TEST_DB_NAME"):
    _db["NAME"] = os.environ["KRUNTIMES_TEST_DB_NAME"]
# a full collection at each test's first scheduling pass would add minutes to the suite; the
# freeze itself has its own test
KRUNTIMES_SCHEDULER_GC_FREEZE = False
# a test reads the Events its code recorded in its own transaction (the writer thread has its
# own test, tests/portal/events/test_event_writer.py)
KRUNTIMES_EVENT_WRITER = "inline"
