"""Fixtures for the authorization suites: the Kubernetes emulator and scripted reviews."""

from __future__ import annotations

import pytest

from portal.auth import authorizer
from tests.helpers.kube import EmulatorServer, ScriptedAccessReviews, ScriptedTokenReviews


@pytest.fixture
def kube_emulator():
    """kmock's KubernetesEmulator on a free localhost port, stopped after the test."""
    with EmulatorServer() as server:
        yield server


@pytest.fixture
def access_reviews(kube_emulator, settings):
    """SubjectAccessReviews posted to the emulator, answered as the test scripts them."""
    settings.KRUNTIMES_KUBERNETES_HOST = kube_emulator.url
    reviews = ScriptedAccessReviews().route(kube_emulator.emulator)
    yield reviews
    reviews.release()  # a held answer must not keep the server's shutdown waiting


@pytest.fixture
def sar_backend(settings):
    """The API authorizes through SubjectAccessReview for this test."""
    authorizer._backend.cache_clear()
    settings.KRUNTIMES_AUTHORIZER = "subjectaccessreview"
    yield
    authorizer._backend.cache_clear()


@pytest.fixture
def token_reviews(kube_emulator, settings):
    """TokenReviews posted to the emulator, answered as the test scripts them; ServiceAccount
    bearer tokens are authenticated by the cluster for this test, with an empty cache."""
    from portal.auth import tokenreview

    settings.KRUNTIMES_KUBERNETES_HOST = kube_emulator.url
    settings.KRUNTIMES_TOKEN_REVIEW = True
    tokenreview.cache.clear()
    yield ScriptedTokenReviews().route(kube_emulator.emulator)
    tokenreview.cache.clear()
