"""The workflow controller's child-Run path past the ``use`` review (seed 002, permission
boundary rule 3): only that identity, only with matching owner references and labels to one
live WorkflowRun; everything else is the normal review (a 403 without ``use``)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.auth.authorizer import UserInfo
from portal.auth.identities import CONTROLLERS_GROUP, controller
from portal.machinery import store
from portal.machinery.admission import WriteContext
from portal.machinery.errors import StatusError
from tests.helpers.workspace_access import (
    JOB_LABEL,
    UID_LABEL,
    grant_ownership,
    grant_runs,
    kind,
    make_workflow_run,
    owned_by,
    workspace_run,
)
from tests.helpers.workspaces import make_workspace

pytestmark = pytest.mark.django_db


@pytest.fixture
def workflow_controller() -> UserInfo:
    return controller("workflow-controller")


@pytest.fixture
def wfr():
    return make_workflow_run("wfr")


def create(manifest, user):
    return store.create(kind("Run"), manifest, context=WriteContext(user=user))


def assert_use_denied(manifest, user):
    with pytest.raises(StatusError) as caught:
        create(manifest, user)
    assert caught.value.code == 403, caught.value.message
    assert "cannot use resource" in caught.value.message


def test_the_controller_has_no_use_of_its_own(workflow_controller, wfr):
    """Without the proof, the controller's own rules do not let it use a workspace."""
    make_workspace("ws", **owned_by(wfr))

    assert_use_denied(workspace_run(), workflow_controller)


def test_a_child_run_of_the_owning_workflow_run_is_admitted(workflow_controller, wfr):
    make_workspace("ws", **owned_by(wfr))

    run = create(workspace_run(metadata=owned_by(wfr)), workflow_controller)

    assert run.labels[UID_LABEL] == str(wfr.uid)


def test_another_user_with_copied_labels_and_owners_is_reviewed(user, wfr):
    grant_runs()
    grant_ownership()  # past owner admission (which refuses most users before): still reviewed
    make_workspace("ws", **owned_by(wfr))

    assert_use_denied(workspace_run(metadata=owned_by(wfr)), user)


def test_a_name_like_the_controller_outside_the_controllers_group_is_reviewed(wfr):
    """A user named like the controller (allowed to create Runs by RBAC) is not the controller."""
    impostor = UserInfo(username="system:kruntimes:workflow-controller", groups=("devs",))
    grant_runs(impostor.username)
    grant_ownership(impostor.username)
    make_workspace("ws", **owned_by(wfr))

    assert_use_denied(workspace_run(metadata=owned_by(wfr)), impostor)


def test_a_workflow_run_being_deleted_is_stale(workflow_controller, wfr):
    make_workspace("ws", **owned_by(wfr))
    type(wfr).objects.filter(pk=wfr.pk).update(deletion_timestamp=timezone.now())

    assert_use_denied(workspace_run(metadata=owned_by(wfr)), workflow_controller)


def test_a_missing_workflow_run_is_stale(workflow_controller, wfr):
    make_workspace("ws", **owned_by(wfr))
    type(wfr).objects.filter(pk=wfr.pk).delete()

    assert_use_denied(workspace_run(metadata=owned_by(wfr)), workflow_controller)


def test_another_job_label_is_cross_job(workflow_controller, wfr):
    make_workspace("ws", **owned_by(wfr, job="build"))

    assert_use_denied(workspace_run(metadata=owned_by(wfr, job="deploy")), workflow_controller)


def test_owner_references_to_different_workflow_runs(workflow_controller, wfr):
    """Labels agree everywhere, but the workspace's controller is another WorkflowRun."""
    other = make_workflow_run("other")
    make_workspace(
        "ws", labels=owned_by(wfr)["labels"], ownerReferences=owned_by(other)["ownerReferences"]
    )

    assert_use_denied(workspace_run(metadata=owned_by(wfr)), workflow_controller)


def test_a_uid_label_that_is_not_the_owner(workflow_controller, wfr):
    other = make_workflow_run("other")
    make_workspace("ws", **owned_by(wfr))
    meta = owned_by(wfr)
    meta["labels"][UID_LABEL] = str(other.uid)

    assert_use_denied(workspace_run(metadata=meta), workflow_controller)


def test_the_workspace_uid_label_must_match_too(workflow_controller, wfr):
    ws_meta = owned_by(wfr)
    ws_meta["labels"][UID_LABEL] = "something-else"
    make_workspace("ws", **ws_meta)

    assert_use_denied(workspace_run(metadata=owned_by(wfr)), workflow_controller)


def test_an_owner_reference_that_is_not_the_controller(workflow_controller, wfr):
    make_workspace("ws", **owned_by(wfr))

    assert_use_denied(workspace_run(metadata=owned_by(wfr, controller=False)), workflow_controller)


def test_a_missing_job_label(workflow_controller, wfr):
    make_workspace("ws", **owned_by(wfr))
    meta = owned_by(wfr)
    del meta["labels"][JOB_LABEL]

    assert_use_denied(workspace_run(metadata=meta), workflow_controller)


def test_the_controller_rules_are_what_it_needs(workflow_controller):
    from portal.auth.authorizer import review

    def may(verb, resource, subresource=""):
        return review(
            workflow_controller, verb, "kruntimes.io", resource, subresource, "default", "x"
        ).allowed

    assert CONTROLLERS_GROUP in workflow_controller.groups
    for verb in ("create", "get", "list", "delete"):
        assert may(verb, "runs") and may(verb, "persistentworkspaces")
    assert may("get", "workflowruns")
    assert not may("use", "persistentworkspaces", "use")
    # what setting its children's owner reference and labels takes (owner admission)
    assert may("delete", "workflowruns") and may("update", "workflowruns", "finalizers")
    assert not may("update", "runs", "finalizers")
