"""``GET .../runs/<name>/log``: text, Status errors, RBAC on ``runs/log``, and follow=true."""

from __future__ import annotations

import pytest

from scheduling import logs
from scheduling.log_views import RunLogView
from scheduling.models import Run
from tests.helpers.api import assert_status
from tests.helpers.records import append_log as append
from tests.helpers.records import make_run

pytestmark = pytest.mark.django_db

GROUP = "kruntimes.io"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
ALICE = [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]


def log_url(name: str = "build", namespace: str = "default") -> str:
    return f"/apis/{GROUP}/v1alpha1/namespaces/{namespace}/runs/{name}/log"


def finish(run: Run, phase: str = "Succeeded") -> None:
    Run.objects.filter(pk=run.pk).update(phase=phase)


@pytest.fixture
def run() -> Run:
    run = make_run("build")
    append(run, 0, "hello\n")
    append(run, 6, "wörld\n")
    return run


def grant(admin_api, rules) -> None:
    role = admin_api.post(
        f"{RBAC}/namespaces/default/roles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "log-reader"},
            "rules": rules,
        },
        format="json",
    )
    assert role.status_code == 201, role.json()
    binding = admin_api.post(
        f"{RBAC}/namespaces/default/rolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "alice-log-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "log-reader",
            },
            "subjects": ALICE,
        },
        format="json",
    )
    assert binding.status_code == 201, binding.json()


@pytest.fixture
def instant_follow(monkeypatch):
    """Followers poll without sleeping; each poll runs the next scripted action."""
    actions: list = []
    clock = {"now": 0.0}

    def sleep(seconds):
        clock["now"] += 0.2
        if actions:
            actions.pop(0)()

    policy = logs.FollowPolicy(poll_interval=0, grace=0.5, sleep=sleep, clock=lambda: clock["now"])
    monkeypatch.setattr(RunLogView, "follow_policy", policy)
    return actions


def test_the_log_as_plain_text(admin_api, run):
    response = admin_api.get(log_url())
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == "hello\nwörld\n"


def test_accept_text_plain_is_served(admin_api, run):
    response = admin_api.get(log_url(), HTTP_ACCEPT="text/plain")
    assert response.status_code == 200
    assert response.content == "hello\nwörld\n".encode()


def test_an_empty_log_is_empty_text(admin_api):
    make_run("quiet")
    response = admin_api.get(log_url("quiet"))
    assert (response.status_code, response.content) == (200, b"")


def test_tail_lines_and_limit_bytes(admin_api, run):
    assert admin_api.get(log_url(), {"tailLines": "1"}).content.decode() == "wörld\n"
    assert admin_api.get(log_url(), {"tailLines": "0"}).content == b""
    assert admin_api.get(log_url(), {"limitBytes": "8"}).content.decode() == "hello\nw"


def test_an_older_attempt(admin_api, run):
    Run.objects.filter(pk=run.pk).update(attempt=2)
    run.refresh_from_db()
    append(run, 0, "retry\n")
    assert admin_api.get(log_url()).content == b"retry\n"
    assert admin_api.get(log_url(), {"attempt": "1"}).content.decode() == "hello\nwörld\n"


def test_the_truncation_marker_is_part_of_the_text(admin_api, run, settings):
    settings.KRUNTIMES_RUN_LOG_LIMIT_BYTES = 13
    append(run, 13, "again\n")
    assert admin_api.get(log_url()).content.decode() == ("[… 6 bytes truncated …]\nwörld\nagain\n")


def test_an_unknown_run_is_a_404_status(admin_api):
    body = assert_status(admin_api.get(log_url("ghost")), 404, "NotFound")
    assert body["message"] == 'runs.kruntimes.io "ghost" not found'


def test_an_unknown_run_is_a_404_status_even_for_text_clients(admin_api):
    response = admin_api.get(log_url("ghost"), HTTP_ACCEPT="text/plain")
    assert response["Content-Type"].startswith("application/json")
    assert_status(response, 404, "NotFound")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"follow": "maybe"}, "follow"),
        ({"attempt": "zero"}, "attempt"),
        ({"attempt": "0"}, "attempt"),
        ({"attempt": "5"}, "attempt"),  # the Run is at attempt 1
        ({"tailLines": "-1"}, "tailLines"),
        ({"tailLines": "1.5"}, "tailLines"),
        ({"limitBytes": "0"}, "limitBytes"),
    ],
)
def test_bad_parameters_are_a_400_status_naming_the_field(admin_api, run, params, field):
    body = assert_status(admin_api.get(log_url(), params), 400, "BadRequest")
    assert [cause["field"] for cause in body["details"]["causes"]] == [field]


def test_anonymous_is_unauthorized(anon_api, run):
    assert_status(anon_api.get(log_url()), 401, "Unauthorized")


def test_without_rbac_the_log_is_forbidden(user_api, run):
    body = assert_status(user_api.get(log_url()), 403, "Forbidden")
    assert 'cannot get resource "runs/log" in API group "kruntimes.io"' in body["message"]


def test_reading_runs_does_not_grant_their_log(user_api, admin_api, run):
    grant(admin_api, [{"apiGroups": [GROUP], "resources": ["runs"], "verbs": ["get"]}])
    assert user_api.get(f"/apis/{GROUP}/v1alpha1/namespaces/default/runs/build").status_code == 200
    assert_status(user_api.get(log_url()), 403, "Forbidden")


def test_a_role_granting_runs_log_get_allows_it(user_api, admin_api, run):
    grant(admin_api, [{"apiGroups": [GROUP], "resources": ["runs/log"], "verbs": ["get"]}])
    response = user_api.get(log_url())
    assert (response.status_code, response.content.decode()) == (200, "hello\nwörld\n")
    # only the log: the Run itself stays forbidden
    assert user_api.get(f"/apis/{GROUP}/v1alpha1/namespaces/default/runs/build").status_code == 403


def test_a_role_for_other_names_does_not_allow_it(user_api, admin_api, run):
    grant(
        admin_api,
        [
            {
                "apiGroups": [GROUP],
                "resources": ["runs/log"],
                "verbs": ["get"],
                "resourceNames": ["other"],
            }
        ],
    )
    assert_status(user_api.get(log_url()), 403, "Forbidden")


def test_follow_streams_chunks_as_they_arrive_until_the_run_ends(admin_api, run, instant_follow):
    instant_follow += [
        lambda: append(run, 13, "third\n"),
        lambda: None,
        lambda: (append(run, 19, "last\n"), finish(run)),
    ]
    response = admin_api.get(log_url(), {"follow": "true"})
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    # empty pieces mark quiet polls (so an ASGI server can stop the stream between them)
    pieces = [piece.decode() for piece in response.streaming_content if piece]
    assert pieces == ["hello\nwörld\n", "third\n", "last\n"]
    assert b"".join(response) == b""  # consumed; a WSGI server iterates only the text


def test_follow_of_a_finished_run_returns_the_whole_log(admin_api, run, instant_follow):
    append(run, 13, "done\n")
    finish(run, "Failed")
    response = admin_api.get(log_url(), {"follow": "1"})
    assert b"".join(response.streaming_content).decode() == "hello\nwörld\ndone\n"


def test_follow_false_is_not_streamed(admin_api, run):
    response = admin_api.get(log_url(), {"follow": "false"})
    assert not response.streaming and response.content.decode() == "hello\nwörld\n"


def test_the_log_is_in_the_openapi_schema(admin_api):
    response = admin_api.get("/api/schema/")
    assert response.status_code == 200
    assert (
        "/apis/kruntimes.io/v1alpha1/namespaces/{namespace}/runs/{name}/log"
        in response.content.decode()
    )


def test_a_storage_failure_mid_stream_ends_the_stream(admin_api, run, instant_follow, monkeypatch):
    from django.db import DatabaseError

    def broken(*args, **kwargs):
        raise DatabaseError("gone")

    instant_follow.append(lambda: monkeypatch.setattr(logs, "attempt_over", broken))
    response = admin_api.get(log_url(), {"follow": "true"})
    assert b"".join(response.streaming_content).decode() == "hello\nwörld\n"


def hang_up(response) -> None:
    """What the WSGI server does when a client disconnects: close the response (without the
    test database connection being closed by request_finished, as the test client does)."""
    from django.core.signals import request_finished
    from django.db import close_old_connections

    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)


@pytest.fixture
def followers(settings, django_user_model):
    """Two streams per web process, one per user; and three users allowed to read logs."""
    from portal.machinery import streams
    from tests.helpers.api import token_client

    settings.KRUNTIMES_MAX_STREAMS, settings.KRUNTIMES_MAX_STREAMS_PER_USER = 2, 1
    clients = {}
    for name in ("ann", "ben", "cat"):
        clients[name] = token_client(django_user_model.objects.create_superuser(name, "", "pw"))
    yield clients
    assert streams.in_use() == (0, {}), "a stream slot was never given back"


def test_follows_past_the_limits_are_429_and_other_requests_still_answer(followers, run):
    ann, ben, cat = followers["ann"], followers["ben"], followers["cat"]
    first = ann.get(log_url(), {"follow": "true"})  # open: not read yet
    assert first.status_code == 200
    per_user = assert_status(ann.get(log_url(), {"follow": "true"}), 429, "TooManyRequests")
    assert "ann already has 1 streams open" in per_user["message"]
    second = ben.get(log_url(), {"follow": "true"})
    assert second.status_code == 200
    total = cat.get(log_url(), {"follow": "true"})
    assert "serves 2 streams" in assert_status(total, 429, "TooManyRequests")["message"]
    assert total["Retry-After"] == "5"
    # everything else keeps answering, logs without follow included
    assert cat.get(log_url()).status_code == 200
    assert cat.get("/apis/kruntimes.io/v1alpha1/namespaces/default/runs").status_code == 200
    # a stream that ends gives its slot back
    finish(run)
    assert b"".join(first.streaming_content).decode() == "hello\nwörld\n"
    third = cat.get(log_url(), {"follow": "true"})
    assert third.status_code == 200
    hang_up(second)
    hang_up(third)


def test_a_follower_that_goes_away_gives_its_slot_back(followers, run):
    ann = followers["ann"]
    hang_up(ann.get(log_url(), {"follow": "true"}))
    again = ann.get(log_url(), {"follow": "true"})
    assert again.status_code == 200
    hang_up(again)
