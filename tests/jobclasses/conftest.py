"""Fixtures of the JobClass suites."""

from tests.jobclasses.kube_support import kube, pods  # noqa: F401 - the emulator fixtures
