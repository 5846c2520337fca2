"""Fixtures of the workspace admission suites: the SubjectAccessReview ones are shared with
tests/portal/auth."""

from tests.portal.auth.conftest import access_reviews, kube_emulator, sar_backend  # noqa: F401
