"""A Job's acceptance (seed 003, "Condition 与 Job 状态机交互"): every condition of
Accepted=True, its reasons when it is False, and what is frozen once it is True.

The classes here are Accepted but not Ready (their workRoot cannot be made), so a Job stops at
Accepted=True/Scheduled=False and no execution starts: the state machine past that point is
``test_job_execution``."""

from __future__ import annotations

import pytest

from jobclasses.models import JobClass, JobPhase, LocalExecutionParameters
from tests.helpers.jobclasses import (
    NAMESPACE_DEFAULT,
    class_manifest,
    create,
    delete,
    job_manifest,
    local_class,
    local_parameters_manifest,
    patch,
    reason,
    reconcile_class,
    reconcile_job,
    set_namespace,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def unusable_work_root(tmp_path, settings):
    """Every LocalExecutionParameters without a workRoot gets one that cannot be made."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    settings.DATA_DIR = blocker


def not_ready_class(name="default", **kw) -> JobClass:
    job_class = local_class(name, **kw)
    assert reason(job_class, "Ready")[0] == "False", job_class.status
    return job_class


def submit(name="job", namespace="default", **spec):
    set_namespace(namespace)
    return reconcile_job(create(job_manifest(name, **spec), namespace=namespace))


def test_an_accepted_job_waits_scheduled_false_while_its_class_is_not_ready():
    not_ready_class(default=True)
    job = submit()
    assert reason(job, "Accepted") == ("True", "Accepted")
    assert reason(job, "Scheduled") == ("False", "JobClassNotReady")
    assert job.phase == JobPhase.PENDING
    assert "executionRef" not in job.status


def test_the_resolved_class_is_stored_with_both_uids():
    job_class = not_ready_class(default=True)
    params = LocalExecutionParameters.objects.get(name="local")
    job = submit()
    assert job.status["resolvedJobClass"] == {
        "name": "default",
        "uid": str(job_class.uid),
        "controllerName": "execution.ayatori.ddupan.top/local",
        "parametersRef": {
            "group": "execution.ayatori.ddupan.top",
            "kind": "LocalExecutionParameters",
            "name": "local",
            "uid": str(params.uid),
        },
    }
    assert (job.job_class, job.job_class_uid) == ("default", str(job_class.uid))


def test_no_default_class_holds_the_job():
    job = submit()
    assert reason(job, "Accepted") == ("False", "NoDefaultJobClass")
    assert "resolvedJobClass" not in job.status


def test_several_default_classes_hold_the_job():
    not_ready_class("one", default=True)
    not_ready_class("two", default=True)
    assert reason(submit(), "Accepted") == ("False", "AmbiguousDefaultJobClass")


def test_an_explicit_class_that_does_not_exist_yet_is_resolved_when_it_appears():
    job = submit(jobClassName="later")
    assert reason(job, "Accepted") == ("False", "JobClassNotFound")
    not_ready_class("later")
    assert reason(reconcile_job(job), "Accepted") == ("True", "Accepted")


def test_the_namespace_default_is_used_before_the_global_one():
    not_ready_class("global", default=True)
    not_ready_class("team")
    set_namespace("team-a", annotations={NAMESPACE_DEFAULT: "team"})
    job = reconcile_job(create(job_manifest("job"), namespace="team-a"))
    assert job.status["resolvedJobClass"]["name"] == "team"


def test_a_resolved_class_is_kept_when_the_defaults_change_later():
    not_ready_class("first", default=True)
    job = submit()
    assert job.job_class == "first"
    not_ready_class("second")
    patch(JobClass.objects.get(name="first"), {"metadata": {"annotations": None}})
    patch(
        JobClass.objects.get(name="second"),
        {
            "metadata": {
                "annotations": {"execution.ayatori.ddupan.top/is-default-job-class": "true"}
            }
        },
    )
    assert reconcile_job(job).job_class == "first"


def test_a_class_that_is_not_accepted_holds_the_job_with_its_reason():
    create(class_manifest("later", parameters="nothing-yet", default=True))
    reconcile_class("later")
    job = submit()
    status, why = reason(job, "Accepted")
    assert (status, why) == ("False", "JobClassNotAccepted")
    assert "ParametersNotFound" in job.status["message"]
    # the parameters appear later: the class is accepted, then the Job
    create(local_parameters_manifest("nothing-yet"))
    reconcile_class("later")
    assert reason(reconcile_job(job), "Accepted") == ("True", "Accepted")


def test_a_class_accepted_for_an_older_generation_does_not_accept_jobs():
    job_class = not_ready_class(default=True)
    patch(job_class, {"spec": {"resources": {"defaults": {"requests": {"cpu": "1"}}}}})
    job = submit()  # the class controller has not seen generation 2 yet
    assert reason(job, "Accepted") == ("False", "JobClassNotAccepted")
    reconcile_class("default")
    assert reason(reconcile_job(job), "Accepted") == ("True", "Accepted")


# --- allowedNamespaces ---------------------------------------------------------------------


SELECTOR = {"matchLabels": {"ayatori.ddupan.top/execution": "enabled"}}


def test_allowed_namespaces_admits_a_matching_namespace():
    not_ready_class(default=True, allowedNamespaces=SELECTOR)
    set_namespace("ci", labels={"ayatori.ddupan.top/execution": "enabled"})
    job = reconcile_job(create(job_manifest("job"), namespace="ci"))
    assert reason(job, "Accepted") == ("True", "Accepted")


def test_allowed_namespaces_refuses_another_namespace_even_with_an_explicit_name():
    not_ready_class("privileged", allowedNamespaces=SELECTOR)
    job = submit(jobClassName="privileged")
    assert reason(job, "Accepted") == ("False", "NamespaceNotAllowed")


def test_a_namespace_label_added_later_lets_a_waiting_job_in():
    not_ready_class(default=True, allowedNamespaces=SELECTOR)
    job = submit()
    assert reason(job, "Accepted")[1] == "NamespaceNotAllowed"
    set_namespace("default", labels={"ayatori.ddupan.top/execution": "enabled"})
    assert reason(reconcile_job(job), "Accepted") == ("True", "Accepted")


def test_a_namespace_label_removed_after_acceptance_does_not_undo_it():
    not_ready_class(default=True, allowedNamespaces=SELECTOR)
    set_namespace("ci", labels={"ayatori.ddupan.top/execution": "enabled"})
    job = reconcile_job(create(job_manifest("job"), namespace="ci"))
    assert reason(job, "Accepted")[0] == "True"
    set_namespace("ci", labels={})
    job = reconcile_job(job)
    assert reason(job, "Accepted") == ("True", "Accepted")
    # ...but a new Job there is refused
    assert reason(submit("new", namespace="ci"), "Accepted")[1] == "NamespaceNotAllowed"


def test_match_expressions_select_namespaces_too():
    not_ready_class(
        default=True,
        allowedNamespaces={
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["ci", "qa"]}]
        },
    )
    set_namespace("qa", labels={"tier": "qa"})
    set_namespace("prod", labels={"tier": "prod"})
    assert reason(reconcile_job(create(job_manifest("a"), namespace="qa")), "Accepted")[0] == "True"
    assert reason(reconcile_job(create(job_manifest("b"), namespace="prod")), "Accepted")[1] == (
        "NamespaceNotAllowed"
    )


# --- resources ------------------------------------------------------------------------------

POLICY = {
    "defaults": {
        "requests": {"cpu": "250m", "memory": "256Mi"},
        "limits": {"cpu": "2", "memory": "2Gi"},
    },
    "minimum": {"requests": {"memory": "64Mi"}},
    "maximum": {"limits": {"cpu": "8", "memory": "16Gi"}},
}


def test_effective_resources_are_written_to_status():
    not_ready_class(default=True, resources=POLICY)
    job = submit(resources={"limits": {"cpu": "4"}})
    assert job.status["effectiveResources"] == {
        "requests": {"cpu": "250m", "memory": "256Mi"},
        "limits": {"cpu": "4", "memory": "2Gi"},
    }


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"limits": {"cpu": "9"}}, "limits.cpu 9 (the Job) is more than the class maximum 8"),
        ({"requests": {"memory": "32Mi"}}, "requests.memory 32Mi (the Job) is less than"),
        ({"requests": {"cpu": "3"}}, "requests.cpu 3 (the Job) is more than limits.cpu 2"),
    ],
)
def test_resources_outside_the_policy_are_refused(resources, message):
    not_ready_class(default=True, resources=POLICY)
    job = submit(resources=resources)
    assert reason(job, "Accepted") == ("False", "InvalidResources")
    assert message in job.status["message"]
    assert "effectiveResources" not in job.status


def test_a_class_policy_change_does_not_change_an_accepted_job():
    job_class = not_ready_class(default=True, resources=POLICY)
    job = submit()
    before = job.status["effectiveResources"]
    patch(job_class, {"spec": {"resources": {"defaults": {"requests": {"cpu": "1"}}}}})
    reconcile_class("default")
    job = reconcile_job(job)
    assert job.status["effectiveResources"] == before
    assert submit("newer").status["effectiveResources"]["requests"]["cpu"] == "1"


# --- UIDs -------------------------------------------------------------------------------------


def test_a_class_recreated_under_the_same_name_does_not_capture_a_waiting_job():
    not_ready_class("default", default=True, allowedNamespaces=SELECTOR)
    job = submit()  # resolved, then refused: NamespaceNotAllowed
    old_uid = job.status["resolvedJobClass"]["uid"]
    JobClass.objects.filter(name="default").delete()  # forced away
    not_ready_class("default", default=True)
    job = reconcile_job(job)
    assert reason(job, "Accepted") == ("False", "JobClassReplaced")
    assert job.status["resolvedJobClass"]["uid"] == old_uid


def test_a_class_recreated_under_the_same_name_does_not_capture_an_accepted_job():
    not_ready_class("default", default=True)
    job = submit()
    JobClass.objects.filter(name="default").delete()
    not_ready_class("default", default=True)
    job = reconcile_job(job)
    assert reason(job, "Accepted") == ("True", "Accepted")
    assert reason(job, "Scheduled") == ("False", "JobClassReplaced")


def test_parameters_recreated_under_the_same_name_do_not_capture_an_accepted_job():
    not_ready_class("default", default=True)
    job = submit()
    LocalExecutionParameters.objects.filter(name="local").delete()
    create(local_parameters_manifest("local"))
    reconcile_class("default")
    job = reconcile_job(job)
    assert reason(job, "Scheduled") == ("False", "ParametersReplaced")


def test_a_deleted_class_leaves_an_accepted_job_waiting_not_moved():
    job_class = not_ready_class("default", default=True)
    not_ready_class("other", default=False)
    job = submit()
    JobClass.objects.filter(pk=job_class.pk).delete()
    job = reconcile_job(job)
    assert reason(job, "Scheduled") == ("False", "JobClassNotFound")
    assert job.job_class == "default"


# --- cancel before start ------------------------------------------------------------------


def test_a_job_cancelled_before_acceptance_fails_cancelled():
    job = create(job_manifest("job", cancelRequested=True), namespace="default")
    job = reconcile_job(job)
    assert job.phase == JobPhase.FAILED
    assert reason(job, "Failed") == ("True", "Cancelled")


def test_a_job_cancelled_while_waiting_for_its_class_fails_without_an_execution():
    not_ready_class(default=True)
    job = submit()
    patch(job, {"spec": {"cancelRequested": True}})
    job = reconcile_job(job)
    assert job.phase == JobPhase.FAILED
    assert reason(job, "Failed") == ("True", "Cancelled")
    assert "executionRef" not in job.status


def test_a_deleted_job_without_an_execution_goes_at_once():
    not_ready_class(default=True)
    job = submit()
    delete(job)
    assert reconcile_job(job) is None


# --- env references --------------------------------------------------------------------------


def secret_env(name="TOKEN", secret="creds", key="token", optional=None):
    ref = {"name": secret, "key": key}
    if optional is not None:
        ref["optional"] = optional
    return [{"name": name, "valueFrom": {"secretKeyRef": ref}}]


def config_env(name="MODE", config="settings", key="mode", optional=None):
    ref = {"name": config, "key": key}
    if optional is not None:
        ref["optional"] = optional
    return [{"name": name, "valueFrom": {"configMapKeyRef": ref}}]


def make_secret(name="creds", namespace="default", **data):
    from portal.machinery import store
    from portal.machinery.registry import registry
    from tests.helpers.operator import OPERATOR
    from tests.helpers.secrets import b64, secret

    body = secret(name, {k: b64(v) for k, v in data.items()})
    return store.create(
        registry.get("", "v1", "secrets"), body, namespace=namespace, context=OPERATOR
    )


def make_config_map(name="settings", namespace="default", **data):
    from portal.machinery import store
    from portal.machinery.registry import registry
    from tests.helpers.operator import OPERATOR
    from tests.helpers.secrets import config_map

    return store.create(
        registry.get("", "v1", "configmaps"),
        config_map(name, data),
        namespace=namespace,
        context=OPERATOR,
    )


def test_a_missing_secret_holds_the_job_naming_it():
    not_ready_class(default=True)
    job = submit(env=secret_env())
    assert reason(job, "Accepted") == ("False", "ReferenceNotFound")
    assert "creds" in job.status["message"]


def test_a_missing_key_of_an_existing_secret_holds_the_job():
    not_ready_class(default=True)
    make_secret(other="x")
    job = submit(env=secret_env())
    assert reason(job, "Accepted") == ("False", "ReferenceNotFound")
    assert "token" in job.status["message"]


def test_a_secret_created_later_lets_the_waiting_job_in():
    not_ready_class(default=True)
    job = submit(env=secret_env())
    make_secret(token="s3cr3t-value")
    job = reconcile_job(job)
    assert reason(job, "Accepted") == ("True", "Accepted")
    assert "s3cr3t-value" not in str(job.status)


def test_optional_references_that_are_missing_do_not_hold_the_job():
    not_ready_class(default=True)
    job = submit(env=secret_env(optional=True) + config_env(optional=True))
    assert reason(job, "Accepted") == ("True", "Accepted")


def test_a_missing_config_map_key_holds_the_job():
    not_ready_class(default=True)
    make_config_map(other="x")
    job = submit(env=config_env())
    assert reason(job, "Accepted") == ("False", "ReferenceNotFound")
    assert "mode" in job.status["message"] and "settings" in job.status["message"]


def test_a_secret_in_another_namespace_does_not_count():
    not_ready_class(default=True)
    set_namespace("other")
    make_secret(namespace="other", token="x")
    assert reason(submit(env=secret_env()), "Accepted")[1] == "ReferenceNotFound"
