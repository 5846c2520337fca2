"""The Run page's live Log panel: it renders, its JSON view continues after an offset, the
download is the attempt's text, and both views need a login with the view permission."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from scheduling.models import Run
from tests.helpers.rbac import bind_role
from tests.helpers.records import append_log as append
from tests.helpers.records import make_run

pytestmark = pytest.mark.django_db


def change_url(run: Run) -> str:
    return reverse("admin:scheduling_run_change", args=[run.pk])


def log_url(run: Run) -> str:
    return reverse("admin:scheduling_run_log", args=[run.pk])


def download_url(run: Run) -> str:
    return reverse("admin:scheduling_run_log_download", args=[run.pk])


@pytest.fixture
def build() -> Run:
    run = make_run("build")
    append(run, 0, "compiling\n")
    append(run, 10, "linking\n")
    return run


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


BOB = [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]


@pytest.fixture
def staff(django_user_model, admin_api):
    """bob: staff with RBAC's read-only ``view`` in default (what the admin lists for him) and
    no Django permission unless a test adds one."""
    bob = django_user_model.objects.create_user("bob", "bob@example.com", "pw", is_staff=True)
    bind_role(admin_api, "bob-view", "ClusterRole", "view", BOB, namespace="default")
    return bob


def test_the_change_page_has_the_log_panel(admin_client, build):
    response = admin_client.get(change_url(build))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="run-log"' in page and "<h2>Log</h2>" in page
    assert f'data-url="{log_url(build)}"' in page
    assert f'href="{download_url(build)}?attempt=1">Download</a>' in page
    assert 'id="run-log-attempt"' not in page  # one attempt: no selector
    assert 'data-active="1"' in page  # the panel offers a reload once the Run ends


def test_the_log_panel_sits_right_after_what_happened_before_the_outputs(admin_client, build):
    page = admin_client.get(change_url(build)).content.decode()
    assert (
        page.index(">Run</h2>")
        < page.index("<h2>Log</h2>")
        < page.index(">Outputs and artifacts</h2>")
        < page.index(">Spec</")
    )


def test_a_finished_run_needs_no_reload(admin_client, build):
    Run.objects.filter(pk=build.pk).update(phase="Succeeded")
    assert 'data-active="0"' in admin_client.get(change_url(build)).content.decode()


def test_a_retried_run_gets_an_attempt_selector(admin_client, build):
    Run.objects.filter(pk=build.pk).update(attempt=3)
    page = admin_client.get(change_url(build)).content.decode()
    assert 'id="run-log-attempt"' in page
    assert '<option value="3" selected>3</option>' in page
    assert '<option value="1">1</option>' in page


def test_the_add_page_has_no_log_panel(admin_client):
    response = admin_client.get(reverse("admin:scheduling_run_add"))
    assert response.status_code == 200
    assert 'id="run-log"' not in response.content.decode()


def test_the_json_view_returns_the_log_and_then_what_follows_an_offset(admin_client, build):
    first = admin_client.get(log_url(build)).json()
    assert first == {
        "text": "compiling\nlinking\n",
        "next": 18,
        "truncatedBytes": 0,
        "finished": False,
    }
    assert admin_client.get(log_url(build), {"after": 18}).json()["text"] == ""
    append(build, 18, "done\n")
    later = admin_client.get(log_url(build), {"after": 18, "attempt": 1}).json()
    assert (later["text"], later["next"]) == ("done\n", 23)


def test_the_json_view_says_when_the_attempt_is_finished(admin_client, build):
    Run.objects.filter(pk=build.pk).update(phase="Succeeded")
    assert admin_client.get(log_url(build)).json()["finished"] is True
    Run.objects.filter(pk=build.pk).update(phase="Running", attempt=2)
    assert admin_client.get(log_url(build), {"attempt": 1}).json()["finished"] is True
    assert admin_client.get(log_url(build), {"attempt": 2}).json() == {
        "text": "",
        "next": 0,
        "truncatedBytes": 0,
        "finished": False,
    }


def test_the_json_view_reports_truncation(admin_client, build, settings):
    settings.KRUNTIMES_RUN_LOG_LIMIT_BYTES = 13
    append(build, 18, "done\n")
    body = admin_client.get(log_url(build)).json()
    assert body["truncatedBytes"] == 10
    assert body["text"] == "[… 10 bytes truncated …]\nlinking\ndone\n"


@pytest.mark.parametrize(
    "query", [{"after": "-1"}, {"after": "x"}, {"attempt": "0"}, {"attempt": "2"}]
)
def test_bad_queries_are_400(admin_client, build, query):
    response = admin_client.get(log_url(build), query)
    assert response.status_code == 400
    assert "error" in response.json()


def test_an_unknown_run_is_404(admin_client, build):
    response = admin_client.get(reverse("admin:scheduling_run_log", args=[build.pk + 100]))
    assert response.status_code == 404


def test_download_is_the_attempt_as_a_text_file(admin_client, build):
    response = admin_client.get(download_url(build), {"attempt": 1})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="default-build-attempt-1.log"'
    assert response.content == b"compiling\nlinking\n"


def test_anonymous_users_are_sent_to_the_login(client, build):
    for url in (log_url(build), download_url(build)):
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"]


def test_staff_without_the_view_permission_is_forbidden(client, staff, build):
    client.force_login(staff)
    assert client.get(log_url(build)).status_code == 403
    assert client.get(download_url(build)).status_code == 403


def test_the_view_permission_is_enough(client, staff, build):
    staff.user_permissions.add(Permission.objects.get(codename="view_run"))
    client.force_login(staff)
    assert client.get(log_url(build)).json()["text"] == "compiling\nlinking\n"
    assert client.get(download_url(build)).status_code == 200
    assert 'id="run-log"' in client.get(change_url(build)).content.decode()
