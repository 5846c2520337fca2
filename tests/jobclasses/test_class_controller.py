"""The JobClass controller (seed 003): Accepted and its stable reasons, Ready from the adapter's
check, observedGeneration on every condition, and the protective finalizers."""

from __future__ import annotations

import pytest
from django.utils import timezone

from jobclasses import class_controller
from jobclasses import status as job_status
from jobclasses.models import Job, JobClass, JobPhase, LocalExecutionParameters
from tests.helpers.jobclasses import (
    GROUP,
    class_manifest,
    create,
    delete,
    job_manifest,
    local_class,
    local_parameters_manifest,
    patch,
    reason,
    reconcile_class,
    reconcile_classes,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def work_root(tmp_path, settings):
    settings.DATA_DIR = tmp_path
    return tmp_path


def test_a_class_on_existing_local_parameters_is_accepted_and_ready():
    job_class = local_class("default")
    assert reason(job_class, "Accepted") == ("True", "Accepted")
    assert reason(job_class, "Ready") == ("True", "BackendReachable")
    assert (job_class.accepted, job_class.ready) == ("True", "True")


def test_every_condition_carries_the_observed_generation():
    job_class = local_class("default")
    patch(job_class, {"spec": {"allowedNamespaces": {"matchLabels": {"a": "b"}}}})
    job_class = reconcile_class("default")
    assert job_class.generation == 2
    assert job_class.status["observedGeneration"] == 2
    assert {c["type"]: c["observedGeneration"] for c in job_class.status["conditions"]} == {
        "Accepted": 2,
        "Ready": 2,
    }


def test_an_unsupported_controller_name_is_not_accepted():
    create(local_parameters_manifest("local"))
    create(class_manifest("k8s", controller="example.com/somebody-else"))
    job_class = reconcile_class("k8s")
    assert reason(job_class, "Accepted") == ("False", "UnsupportedController")
    assert reason(job_class, "Ready") == ("False", "NotAccepted")
    assert "example.com/somebody-else" in job_class.status["conditions"][0]["message"]


def test_a_parameters_kind_the_controller_does_not_list_is_an_invalid_reference():
    create(class_manifest("wrong", parameters_kind="KubernetesExecutionParameters"))
    job_class = reconcile_class("wrong")
    assert reason(job_class, "Accepted") == ("False", "InvalidParametersReference")


def test_a_parameters_reference_to_another_group_is_invalid():
    manifest = class_manifest("other-group")
    manifest["spec"]["parametersRef"]["group"] = "example.com"
    create(manifest)
    assert reason(reconcile_class("other-group"), "Accepted") == (
        "False",
        "InvalidParametersReference",
    )


def test_missing_parameters_then_parameters_that_appear_later():
    create(class_manifest("later", parameters="late"))
    assert reason(reconcile_class("later"), "Accepted") == ("False", "ParametersNotFound")
    create(local_parameters_manifest("late"))
    assert reason(reconcile_class("later"), "Accepted") == ("True", "Accepted")


def test_an_inconsistent_resource_policy_is_not_accepted():
    job_class = local_class(
        "greedy",
        resources={"minimum": {"limits": {"cpu": "4"}}, "maximum": {"limits": {"cpu": "2"}}},
    )
    status, why = reason(job_class, "Accepted")
    assert (status, why) == ("False", "InvalidResourcePolicy")
    assert (
        "minimum.limits.cpu 4 is more than maximum.limits.cpu 2"
        in (job_class.status["conditions"][0]["message"])
    )


def test_ready_is_false_while_the_backend_is_unusable(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    job_class = local_class("broken", params_spec={"workRoot": str(blocker / "jobs")})
    assert reason(job_class, "Accepted") == ("True", "Accepted")
    assert reason(job_class, "Ready") == ("False", "BackendUnreachable")
    params = LocalExecutionParameters.objects.get(name="local")
    patch(params, {"spec": {"workRoot": str(tmp_path / "jobs")}})
    assert reason(reconcile_class("broken"), "Ready") == ("True", "BackendReachable")


def test_a_condition_keeps_its_transition_time_while_its_status_holds():
    first = local_class("default")
    before = {c["type"]: c["lastTransitionTime"] for c in first.status["conditions"]}
    class_controller.reconcile_class(JobClass.objects.get(name="default"), timezone.now())
    after = JobClass.objects.get(name="default")
    assert {c["type"]: c["lastTransitionTime"] for c in after.status["conditions"]} == before


# --- protection ---------------------------------------------------------------------------


def job_on(job_class: JobClass, name: str, phase: str) -> Job:
    job = create(job_manifest(name), namespace="default")
    status = {
        "phase": phase,
        "resolvedJobClass": {
            "name": job_class.name,
            "uid": str(job_class.uid),
            "controllerName": job_class.controller_name,
            "parametersRef": {"group": GROUP, "kind": "LocalExecutionParameters", "name": "local"},
        },
    }
    assert job_status.write(job, status)
    return job


def test_a_class_referenced_by_a_non_terminal_job_cannot_be_deleted():
    job_class = local_class("default")
    job = job_on(job_class, "running", JobPhase.RUNNING)
    job_on(job_class, "done", JobPhase.SUCCEEDED)
    delete(job_class)
    reconcile_classes()
    held = JobClass.objects.get(name="default")
    assert held.deletion_timestamp is not None
    assert class_controller.jobs_holding(held) == ["default/running"]
    # the Job ends (its backend cleanup is done): the class goes
    assert job_status.write(Job.objects.get(pk=job.pk), {**job.status, "phase": "Failed"})
    reconcile_classes()
    assert not JobClass.objects.filter(name="default").exists()


def test_a_job_in_result_unknown_still_holds_its_class():
    job_class = local_class("default")
    job_on(job_class, "unknown", JobPhase.UNKNOWN)
    delete(job_class)
    reconcile_classes()
    assert JobClass.objects.filter(name="default").exists()


def test_a_job_of_a_previous_class_with_the_same_name_does_not_hold_the_new_one():
    old = local_class("default")
    job_on(old, "old-job", JobPhase.RUNNING)
    JobClass.objects.filter(pk=old.pk).delete()  # forced away, as the runbook's recovery does
    new = local_class("default")
    delete(new)
    reconcile_classes()
    assert not JobClass.objects.filter(name="default").exists()


def test_parameters_are_kept_while_a_class_references_them():
    job_class = local_class("default")
    params = LocalExecutionParameters.objects.get(name="local")
    delete(params)
    reconcile_classes()
    assert LocalExecutionParameters.objects.get(name="local").deletion_timestamp is not None
    delete(job_class)
    reconcile_classes()  # the class has no Jobs: it goes, then its parameters can
    assert not JobClass.objects.filter(name="default").exists()
    reconcile_classes()
    assert not LocalExecutionParameters.objects.filter(name="local").exists()


def test_unreferenced_parameters_are_deleted_at_once_by_the_next_pass():
    create(local_parameters_manifest("spare"))
    delete(LocalExecutionParameters.objects.get(name="spare"))
    reconcile_classes()
    assert not LocalExecutionParameters.objects.filter(name="spare").exists()
