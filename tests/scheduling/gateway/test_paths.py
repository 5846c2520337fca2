"""The invoke path: made by ``invoke_path`` (what a Ready Run's endpoint URL ends with) and
recognised by the gateway; any other path is the API's."""

from __future__ import annotations

import pytest

from scheduling.gateway.paths import invoke_path, invoke_target


def test_a_made_path_is_read_back():
    path = invoke_path("team-a", "fn", "2c24c1f0-9f8f-4f80-82d5-3dd16a12d1e6")
    assert path == "/v1/namespaces/team-a/runs/fn/2c24c1f0-9f8f-4f80-82d5-3dd16a12d1e6/invoke"
    assert invoke_target(path) == ("team-a", "fn", "2c24c1f0-9f8f-4f80-82d5-3dd16a12d1e6")


@pytest.mark.parametrize(
    "path",
    [
        "/v1/namespaces/team-a/runs/fn/invoke",
        "/v1/namespaces/team-a/runs/fn/uid/extra/invoke",
        "/v1/namespaces/team-a/jobs/fn/uid/invoke",
        "/v1/namespaces//runs/fn/uid/invoke",
        "/api/v1/namespaces/team-a/runs/fn/uid/invoke",
        "/apis/kruntimes.io/v1alpha1/namespaces/team-a/runs/fn",
        "/v1/namespaces/team-a/runs/fn/uid/invoked",
    ],
)
def test_other_paths_are_not_invocations(path):
    assert invoke_target(path) is None
