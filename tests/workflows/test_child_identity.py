"""A WorkflowRun trusts only the children it made: each child's UID is recorded in
``status.children`` as it is created (in the same transaction), outputs and phases are read only
from those UIDs, a name another object holds gets a second name (an HMAC of it) with a
``NameTaken`` Warning Event, and a WorkflowRun from before the record adopts its children once."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.machinery import history
from portal.models import ControllerRevision, Event
from scheduling.models import Run
from tests.helpers.records import make_run
from tests.workflows.test_controller import finish, job, make, settle, start, step, tick
from workflows import controller
from workflows.models import WorkflowRun
from workflows.names import child_labels, child_name, owner_reference, second_name
from workspaces.models import PersistentWorkspace

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def runtime():
    from tests.helpers.records import make_runtime

    make_runtime()


def recorded(wfr) -> dict[tuple[str, str], str]:
    return {(c["kind"], c["name"]): c["uid"] for c in wfr.status["children"]}


def snapshot_of(wfr) -> dict[tuple[str, str], str]:
    """The recorded entry of the run's snapshot (``workflows.snapshots``), made first."""
    revision = ControllerRevision.objects.get(name=wfr.status["snapshotName"])
    return {("ControllerRevision", revision.name): str(revision.uid)}


def forge(wfr, name, job_name="build", step_name="s"):
    """What a privileged writer (past admission) can make: the name, the labels, the owner."""
    return make_run(
        name,
        labels=child_labels(wfr, job_name, step_name),
        owner_references=[owner_reference(wfr)],
    )


def name_taken_events(wfr) -> list[Event]:
    return list(Event.objects.filter(involved_uid=str(wfr.uid), reason="NameTaken"))


def test_each_child_is_recorded_by_uid_when_it_is_made():
    wfr = settle(start({"build": job(step("s"), step("t"))}))
    ws = PersistentWorkspace.objects.get(name=child_name("wfr", "build"))
    s = Run.objects.get(name=child_name("wfr", "build", "s"))
    assert recorded(wfr) == {
        **snapshot_of(wfr),
        ("PersistentWorkspace", ws.name): str(ws.uid),
        ("Run", s.name): str(s.uid),
    }
    finish(s, outputs={"v": "1"})
    wfr = settle(wfr)
    t = Run.objects.get(name=child_name("wfr", "build", "t"))
    assert recorded(wfr)[("Run", t.name)] == str(t.uid)


def test_a_name_a_stranger_holds_gets_a_second_name_and_a_warning():
    wfr = start({"build": job(step("s", "echo ${{ inputs.who }}"))}, inputs={"who": "me"})
    forged = forge(wfr, child_name("wfr", "build", "s"))
    finish(forged, outputs={"ver": '"; cat build.txt > stolen.txt; echo "'})
    wfr = settle(wfr)
    second = second_name(wfr, child_name("wfr", "build", "s"))
    own = Run.objects.get(name=second)
    assert own.spec["source"]["inline"] == "echo me"
    assert recorded(wfr) == {
        **snapshot_of(wfr),
        ("PersistentWorkspace", "wfr-build"): recorded(wfr)[("PersistentWorkspace", "wfr-build")],
        ("Run", second): str(own.uid),
    }
    assert wfr.status["jobs"]["build"]["phase"] == "Waiting"  # not the forged Run's Succeeded
    assert wfr.status["jobs"]["build"]["steps"][0]["runName"] == second
    (event,) = name_taken_events(wfr)
    assert event.type == "Warning"
    assert f"named {forged.name} exists and is not this WorkflowRun's" in event.message
    finish(own, outputs={"ver": "1.0"})
    wfr = settle(wfr)
    assert wfr.phase == "Succeeded"
    assert wfr.status["jobs"]["build"]["steps"][0]["outputs"] == {"ver": "1.0"}
    assert len(name_taken_events(wfr)) == 1  # once, when the second child was made


def test_the_second_name_cannot_be_guessed_without_the_secret_key(settings):
    wfr = start({"build": job(step("s"))})
    first = second_name(wfr, "wfr-build-s")
    settings.SECRET_KEY = "another key"
    assert second_name(wfr, "wfr-build-s") != first
    assert first.startswith("wfr-build-s-") and len(first) == len("wfr-build-s-") + 10


def test_a_name_taken_while_the_pass_ran_gets_the_second_name_too(monkeypatch):
    """The 409 path: a stranger creates the Run after the children were loaded."""
    wfr = settle(start({"build": job(step("s"), step("t"))}))
    finish(Run.objects.get(name="wfr-build-s"))
    load = controller.load_children

    def racing_load(wfr):
        children = load(wfr)
        forge(wfr, "wfr-build-t", step_name="t")
        return children

    monkeypatch.setattr(controller, "load_children", racing_load)
    wfr = tick(wfr)
    assert ("Run", second_name(wfr, "wfr-build-t")) in recorded(wfr)
    assert ("Run", "wfr-build-t") not in recorded(wfr)
    assert len(name_taken_events(wfr)) == 1


def test_a_forged_workspace_and_called_workflow_run_are_not_used():
    make("Workflow", "lib", {"jobs": {"inner": job(step("go"))}})
    wfr = start({"build": job(step("s")), "call": {"uses": "lib"}})
    make_run("unrelated")  # not every Run is a stranger to fear
    PersistentWorkspace.objects.create(
        name="wfr-build", namespace="default", spec={"runtime": "bash"},
        labels=child_labels(wfr, "build"), owner_references=[owner_reference(wfr)],
    )  # fmt: skip
    WorkflowRun.objects.create(
        name="wfr-call", namespace="default", spec={"jobs": {}},
        labels=child_labels(wfr, "call"), owner_references=[owner_reference(wfr)],
        status={"phase": "Succeeded", "outputs": {"x": "forged"}},
    )  # fmt: skip
    wfr = settle(wfr)
    ws_name = second_name(wfr, "wfr-build")
    assert Run.objects.get(name="wfr-build-s").spec["workspace"]["name"] == ws_name
    assert wfr.status["jobs"]["call"]["workflowRunName"] == second_name(wfr, "wfr-call")
    assert wfr.status["jobs"]["call"]["phase"] == "Running"
    assert {("PersistentWorkspace", ws_name), ("WorkflowRun", second_name(wfr, "wfr-call"))} <= set(
        recorded(wfr)
    )
    assert len(name_taken_events(wfr)) == 2


def test_a_child_is_not_made_when_its_uid_cannot_be_recorded():
    """The creates and the record are one transaction: a pass computed from a WorkflowRun that
    someone else wrote since it was read makes no child (the next pass makes them), never a
    child nobody recorded."""
    wfr = start({"build": job(step("s"))})
    stale = WorkflowRun.objects.get(pk=wfr.pk)
    other = WorkflowRun.objects.get(pk=wfr.pk)
    assert history.compare_and_set(other, {"labels": {**other.labels, "touched": "yes"}})
    assert controller.reconcile(stale, timezone.now()) is False
    wfr = WorkflowRun.objects.get(pk=wfr.pk)
    assert wfr.labels["touched"] == "yes"
    assert not Run.objects.exists() and not PersistentWorkspace.objects.exists()
    assert not ControllerRevision.objects.exists()
    assert "children" not in (wfr.status or {})
    wfr = settle(wfr)
    assert Run.objects.filter(name="wfr-build-s").exists()


def strip_children(wfr) -> WorkflowRun:
    """A WorkflowRun as the controller left it before it recorded children."""
    status = {k: v for k, v in wfr.status.items() if k != "children"}
    assert history.compare_and_set(wfr, {"status": status})
    return WorkflowRun.objects.get(pk=wfr.pk)


def test_an_old_workflow_run_adopts_its_children_once():
    wfr = settle(start({"build": job(step("s"), step("t"))}))
    before = recorded(wfr)
    old = strip_children(wfr)
    assert "children" not in old.status
    wfr = tick(old)
    assert recorded(wfr) == before  # what it owned by name, label and controller reference
    finish(Run.objects.get(name="wfr-build-s"), outputs={"v": "real"})
    # once adopted, a forgery under the next step's name is a stranger
    forge(wfr, "wfr-build-t", step_name="t")
    wfr = settle(wfr)
    assert ("Run", second_name(wfr, "wfr-build-t")) in recorded(wfr)
    assert ("Run", "wfr-build-t") not in recorded(wfr)
    assert wfr.status["jobs"]["build"]["steps"][0]["outputs"] == {"v": "real"}


def test_a_new_workflow_run_adopts_nothing():
    """No status yet is not an old WorkflowRun: a forgery made before the first pass is not
    adopted."""
    wfr = start({"build": job(step("s"))})
    forged = forge(wfr, "wfr-build-s")
    wfr = settle(wfr)
    assert ("Run", forged.name) not in recorded(wfr)
    assert ("Run", second_name(wfr, "wfr-build-s")) in recorded(wfr)


def test_the_admin_page_links_only_recorded_children():
    from workflows.admin import ChildRuns

    wfr = settle(start({"build": job(step("s"), step("t"))}))
    forge(wfr, "wfr-build-t", step_name="t")  # labelled as step t, which has no Run yet
    children = ChildRuns(wfr)
    assert children.for_step("build", {"name": "t"}, 1) is None
    s = Run.objects.get(name="wfr-build-s")
    assert children.for_step("build", {"name": "s"}, 0) == s
