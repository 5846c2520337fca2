"""The operators' admin pages of JobClass, the three parameter kinds and Job: every page, the
class's acceptance and the namespaces it admits, who holds a Terminating object, Cancel and the
superuser's audited forced finalizer removal.

Outside the ``processes`` test the data directory is a file, so local classes are Accepted but
not Ready and no execution starts (as in ``test_job_acceptance``)."""

from __future__ import annotations

import time

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from jobclasses.models import (
    CLASS_PROTECTION,
    EXECUTION_CLEANUP,
    GROUP,
    PARAMETERS_PROTECTION,
    Job,
    JobClass,
    JobPhase,
    KubernetesExecutionParameters,
    LocalExecutionParameters,
    OpenSandboxExecutionParameters,
)
from tests.helpers.jobclasses import (
    API_VERSION,
    class_manifest,
    create,
    delete,
    job_manifest,
    local_class,
    reason,
    reconcile_class,
    reconcile_job,
    set_namespace,
)

pytestmark = pytest.mark.django_db

FORCE = "remove_finalizers"
OPENSANDBOX = {
    "apiVersion": API_VERSION,
    "kind": "OpenSandboxExecutionParameters",
    "metadata": {"name": "microvm"},
    "spec": {
        "endpoint": "https://opensandbox-api.example.internal",
        "apiKeySecretRef": {
            "namespace": "ayatori-system",
            "name": "opensandbox-api",
            "key": "api-key",
        },
        "poolRef": "microvm",
        "allowSecretEnv": True,
    },
}
KUBERNETES = {
    "apiVersion": API_VERSION,
    "kind": "KubernetesExecutionParameters",
    "metadata": {"name": "rootless"},
    "spec": {
        "serviceAccountName": "ayatori-job",
        "runtimeClassName": "runc",
        "scheduling": {
            "nodeSelector": {"ayatori.ddupan.top/node-role": "execution"},
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoSchedule"}
            ],
        },
    },
}
POLICY = {
    "defaults": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "2"}},
    "maximum": {"limits": {"cpu": "8", "memory": "16Gi"}},
}


@pytest.fixture(autouse=True)
def unusable_work_root(tmp_path, settings):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    settings.DATA_DIR = blocker
    set_namespace("default")


@pytest.fixture
def client(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def staff(django_user_model):
    """bob: staff with Django's permissions on every jobclasses model, not a superuser."""
    bob = django_user_model.objects.create_user("bob", "bob@example.com", "pw", is_staff=True)
    bob.user_permissions.add(*Permission.objects.filter(content_type__app_label="jobclasses"))
    return bob


def url(model, view, *args):
    return reverse(f"admin:jobclasses_{model._meta.model_name}_{view}", args=args)


def page(client, model, view, *args, query=""):
    response = client.get(url(model, view, *args) + query)
    assert response.status_code == 200
    return response.content.decode()


def listed(client, model, query=""):
    response = client.get(url(model, "changelist") + query)
    assert response.status_code == 200
    return sorted(obj.name for obj in response.context["cl"].result_list)


def act(client, model, action, *objects, **extra):
    return client.post(
        url(model, "changelist"),
        {"action": action, "_selected_action": [str(o.pk) for o in objects], **extra},
    )


def messages_of(response):
    return [str(m) for m in get_messages(response.wsgi_request)]


def accepted_job(name="job", **spec) -> Job:
    job = reconcile_job(create(job_manifest(name, **spec), namespace="default"))
    assert reason(job, "Accepted") == ("True", "Accepted"), job.status
    return job


# ------------------------------------------------------------------------------ every page


def test_every_list_and_detail_page_renders(client):
    local_class("default", default=True, resources=POLICY)
    create(KUBERNETES)
    create(OPENSANDBOX)
    create(
        class_manifest(
            "rootless",
            controller=f"{GROUP}/kubernetes",
            parameters="rootless",
            parameters_kind="KubernetesExecutionParameters",
        )
    )
    reconcile_class("rootless")
    job = accepted_job()
    for model in (
        JobClass,
        KubernetesExecutionParameters,
        OpenSandboxExecutionParameters,
        LocalExecutionParameters,
        Job,
    ):
        page(client, model, "changelist")
        for obj in model.objects.all():
            page(client, model, "change", obj.pk)
        page(client, model, "add")
    html = page(client, Job, "change", job.pk)
    assert "250m" in html and "256Mi" in html
    # the app's own index lists its models (the main index groups them in sections)
    apps = client.get(reverse("admin:app_list", args=["jobclasses"])).context["app_list"]
    (section,) = [app for app in apps if app["app_label"] == "jobclasses"]
    assert section["name"] == "Job classes"
    assert {m["object_name"] for m in section["models"]} == {
        "JobClass",
        "Job",
        "LocalExecutionParameters",
        "KubernetesExecutionParameters",
        "OpenSandboxExecutionParameters",
    }


def test_class_list_shows_acceptance_readiness_default_parameters_and_active_jobs(client):
    local_class("default", default=True)
    create(
        class_manifest(
            "rootless",
            controller="example.com/somebody-else",
            parameters="rootless",
            parameters_kind="KubernetesExecutionParameters",
        )
    )
    reconcile_class("rootless")
    accepted_job("a")
    accepted_job("b")
    html = page(client, JobClass, "changelist")
    assert "UnsupportedController" in html and "BackendUnreachable" in html
    assert "no controller in this portal handles" in html  # the message, on hover
    assert "LocalExecutionParameters/local" in html
    assert "KubernetesExecutionParameters/rootless" in html
    assert ">2</span>" in html  # the two Jobs on "default"
    assert listed(client, JobClass, "?accepted=False") == ["rootless"]
    assert listed(client, JobClass, "?accepted=True") == ["default"]
    assert listed(client, JobClass, "?is_default__exact=1") == ["default"]
    assert listed(client, JobClass, f"?controller_name={GROUP}/local") == ["default"]
    assert listed(client, JobClass, "?ready=False") == ["default", "rootless"]
    assert listed(client, JobClass, "?q=rootless") == ["rootless"]
    assert listed(client, JobClass, "?q=somebody-else") == ["rootless"]


def test_class_detail_not_accepted_policy_and_parameters(client):
    create(class_manifest("lost", parameters="missing", resources=POLICY))
    job_class = reconcile_class("lost")
    assert reason(job_class, "Accepted") == ("False", "ParametersNotFound")
    html = page(client, JobClass, "change", job_class.pk)
    assert "ParametersNotFound" in html and "LocalExecutionParameters missing not found" in html
    assert "not found" in html and "NotAccepted" in html
    assert "observedGeneration 1 of generation 1" in html and "stale" not in html
    assert "requests cpu" in html and "<code>16Gi</code>" in html and "<code>250m</code>" in html
    JobClass.objects.filter(pk=job_class.pk).update(generation=2)
    html = page(client, JobClass, "change", job_class.pk)
    assert "observedGeneration 1 of generation 2" in html and "stale" in html


def test_class_detail_links_its_parameters_and_its_jobs(client):
    job_class = local_class("default", default=True)
    job = accepted_job()
    html = page(client, JobClass, "change", job_class.pk)
    params = LocalExecutionParameters.objects.get(name="local")
    assert url(LocalExecutionParameters, "change", params.pk) in html
    assert url(Job, "change", job.pk) in html and "default/job" in html


def test_the_namespaces_the_selector_admits_now(client):
    for name, labels in (("team-a", {"exec": "on"}), ("team-b", {"exec": "off"}), ("other", {})):
        set_namespace(name, labels=labels)
    selective = local_class("selective", allowedNamespaces={"matchLabels": {"exec": "on"}})
    html = page(client, JobClass, "change", selective.pk)
    assert "<code>exec=on</code>" in html
    admitted = html.split('class="k-admitted">')[1].split("</span>")[0]
    assert ">team-a</a>" in admitted and "team-b" not in admitted and ">other<" not in admitted
    everyone = local_class("everyone")
    html = page(client, JobClass, "change", everyone.pk)
    assert "every namespace may use this class" in html
    for name in ("team-a", "team-b", "other", "default"):
        assert f">{name}</a>" in html


def test_a_terminating_class_says_which_jobs_hold_it(client):
    job_class = local_class("default", default=True)
    job = accepted_job()
    delete(job_class)
    job_class = reconcile_class("default")
    assert job_class.deletion_timestamp is not None and CLASS_PROTECTION in job_class.finalizers
    html = page(client, JobClass, "change", job_class.pk)
    assert "1 non-terminal Jobs: default/job" in html and "Terminating" in html
    assert job.phase == JobPhase.PENDING


# ------------------------------------------------------------------------------ parameters


def test_opensandbox_parameters_show_the_secret_reference_only(client):
    params = create(OPENSANDBOX)
    create(
        class_manifest(
            "microvm",
            controller=f"{GROUP}/opensandbox",
            parameters="microvm",
            parameters_kind="OpenSandboxExecutionParameters",
        )
    )
    html = page(client, OpenSandboxExecutionParameters, "change", params.pk)
    assert "Secret <code>ayatori-system/opensandbox-api</code> key <code>api-key</code>" in html
    assert "https://opensandbox-api.example.internal" in html and "allowSecretEnv" in html
    assert url(JobClass, "change", JobClass.objects.get(name="microvm").pk) in html
    assert "opensandbox-api.example.internal" in page(
        client, OpenSandboxExecutionParameters, "changelist"
    )


def test_parameters_list_names_the_classes_in_one_query(client):
    local_class("a")
    local_class("b")
    local_class("c", parameters="other")
    with CaptureQueriesContext(connection) as one:
        html = page(client, LocalExecutionParameters, "changelist")
    assert '<td class="field-classes_cell">a, b</td>' in html
    assert '<td class="field-classes_cell">c</td>' in html
    local_class("d", parameters="third")
    with CaptureQueriesContext(connection) as more:
        page(client, LocalExecutionParameters, "changelist")
    assert len(more.captured_queries) == len(one.captured_queries)


def test_class_and_job_lists_do_not_query_per_row(client):
    local_class("default", default=True)
    accepted_job("a")

    def queries(model):
        with CaptureQueriesContext(connection) as seen:
            page(client, model, "changelist")
        return len(seen.captured_queries)

    before = (queries(JobClass), queries(Job))
    local_class("other")
    accepted_job("b", jobClassName="other")
    accepted_job("c")
    assert (queries(JobClass), queries(Job)) == before


def test_kubernetes_parameters_spec_is_readable(client):
    params = create(KUBERNETES)
    html = page(client, KubernetesExecutionParameters, "change", params.pk)
    assert "ayatori-job" in html and "runc" in html and "NoSchedule" in html
    assert "ayatori.ddupan.top/node-role=execution" in html


def test_terminating_parameters_say_which_classes_hold_them(client):
    local_class("default")
    params = LocalExecutionParameters.objects.get(name="local")
    delete(params)
    params = LocalExecutionParameters.objects.get(pk=params.pk)
    assert PARAMETERS_PROTECTION in params.finalizers
    html = page(client, LocalExecutionParameters, "change", params.pk)
    assert (
        "1 JobClasses still referencing it" in html
        and url(JobClass, "change", JobClass.objects.get(name="default").pk) in html
    )


# ------------------------------------------------------------------------------ Job


def test_job_list_filters_and_search(client):
    local_class("default", default=True)
    local_class("other")
    accepted_job("a")
    accepted_job("b", jobClassName="other")
    create(class_manifest("nowhere", parameters="missing"))
    create(job_manifest("c", jobClassName="nowhere"), namespace="default")
    html = page(client, Job, "changelist")
    assert "JobClassNotReady" in html and "0/1" not in html
    assert listed(client, Job, "?job_class=other") == ["b"]
    assert listed(client, Job, "?phase__exact=Pending") == ["a", "b", "c"]
    assert listed(client, Job, "?namespace=default") == ["a", "b", "c"]
    assert listed(client, Job, "?q=other") == ["b"]
    assert listed(client, Job, "?q=nowhere") == ["c"]


def test_a_job_whose_class_was_replaced_says_so(client):
    job_class = local_class("default", default=True)
    job = accepted_job()
    JobClass.objects.filter(pk=job_class.pk).update(finalizers=[])
    delete(JobClass.objects.get(pk=job_class.pk))
    html = page(client, Job, "change", job.pk)
    assert "gone" in html
    local_class("default", default=True)
    html = page(client, Job, "change", job.pk)
    assert "replaced" in html and str(job_class.uid) in html


def test_cancel_sets_cancel_requested(client):
    local_class("default", default=True)
    job = accepted_job()
    response = act(client, Job, "cancel_jobs", job)
    assert response.status_code == 302
    job = Job.objects.get(pk=job.pk)
    assert job.spec["cancelRequested"] is True and job.cancel_requested
    assert any("Requested cancellation of 1 Jobs" in m for m in messages_of(response))


# ------------------------------------------------------------------------------ forced removal


@pytest.mark.parametrize("model", [JobClass, Job, LocalExecutionParameters])
def test_forced_removal_is_hidden_from_and_refused_to_a_non_superuser(client, staff, model):
    local_class("default", default=True)
    accepted_job()
    obj = model.objects.get()
    client.force_login(staff)
    html = page(client, model, "changelist")
    assert f'value="{FORCE}"' not in html
    response = act(client, model, FORCE, obj, post="yes")
    assert response.status_code == 302
    assert model.objects.get(pk=obj.pk).finalizers == obj.finalizers != []
    assert not LogEntry.objects.exists()


def test_the_generic_action_refuses_a_non_superuser_even_when_called(rf, staff):
    from django.contrib import admin
    from django.contrib.messages.storage.fallback import FallbackStorage

    local_class("default")
    request = rf.post("/", {"post": "yes"})
    request.user = staff
    request.session = {}
    request._messages = FallbackStorage(request)
    model_admin = admin.site._registry[JobClass]
    assert model_admin.remove_finalizers(request, JobClass.objects.all()) is None
    assert JobClass.objects.get().finalizers == [CLASS_PROTECTION]
    assert any("Only a superuser" in str(m) for m in request._messages)


def test_forced_removal_of_a_class_lists_the_jobs_confirms_and_audits(client, admin_user):
    job_class = local_class("default", default=True)
    accepted_job()
    delete(job_class)
    confirm = act(client, JobClass, FORCE, job_class)
    assert confirm.status_code == 200
    html = confirm.content.decode()
    assert "1 Jobs still using it: default/job" in html and 'name="post" value="yes"' in html
    assert "Force-remove finalizers" in page(client, JobClass, "changelist")
    assert JobClass.objects.get(pk=job_class.pk).finalizers == [CLASS_PROTECTION]

    response = act(client, JobClass, FORCE, job_class, post="yes")
    assert response.status_code == 302
    assert not JobClass.objects.filter(pk=job_class.pk).exists()  # was Terminating
    (entry,) = LogEntry.objects.filter(action_flag=CHANGE)
    assert entry.user == admin_user and entry.object_id == str(job_class.pk)
    assert CLASS_PROTECTION in entry.change_message and "as admin" in entry.change_message
    assert "default/job" in entry.change_message


def test_forced_removal_of_a_job_says_its_execution_is_not_deleted(client, admin_user):
    local_class("default", default=True)
    job = accepted_job()
    Job.objects.filter(pk=job.pk).update(
        status={**job.status, "executionRef": {"type": "local", "id": "x1"}}
    )
    html = act(client, Job, FORCE, job).content.decode()
    assert "the execution is not deleted" in html and "x1" in html
    assert "its execution may still be running" in html
    act(client, Job, FORCE, job, post="yes")
    after = Job.objects.get(pk=job.pk)
    assert after.finalizers == [] and after.deletion_timestamp is None
    (entry,) = LogEntry.objects.filter(action_flag=CHANGE)
    assert EXECUTION_CLEANUP in entry.change_message and "x1" in entry.change_message


def test_forced_removal_of_parameters_names_the_classes(client):
    local_class("default")
    params = LocalExecutionParameters.objects.get()
    html = act(client, LocalExecutionParameters, FORCE, params).content.decode()
    assert "1 JobClasses using it: default" in html
    act(client, LocalExecutionParameters, FORCE, params, post="yes")
    assert LocalExecutionParameters.objects.get().finalizers == []
    assert PARAMETERS_PROTECTION in LogEntry.objects.get().change_message


# ------------------------------------------------------------------------------ a real run


@pytest.mark.processes
def test_a_succeeded_local_job_shows_its_steps_and_log(client, tmp_path, settings):
    settings.DATA_DIR = tmp_path
    local_class("default", default=True)
    steps = [
        {"name": "build", "run": "echo '<b>built</b>'"},
        {"name": "test", "run": "echo tested"},
    ]
    job = create(job_manifest("job", steps=steps), namespace="default")
    deadline = time.monotonic() + 20
    while job.phase != JobPhase.SUCCEEDED:
        assert job.phase != JobPhase.FAILED and time.monotonic() < deadline, job.status
        job = reconcile_job(job)
        time.sleep(0.1)
    html = page(client, Job, "change", job.pk)
    assert "<code>build</code>" in html and "<code>test</code>" in html
    assert "&lt;b&gt;built&lt;/b&gt;" in html and "<b>built</b>" not in html
    assert "tested" in html
    assert "/apis/execution.ayatori.ddupan.top/v1alpha1/namespaces/default/jobs/job/log" in html
    assert "took" in html
    assert ">2/2<" in page(client, Job, "changelist")
