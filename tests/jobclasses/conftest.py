"""Fixtures of the JobClass suites."""

from tests.jobclasses.kube_support import kube  # noqa: F401 - the emulator fixture
