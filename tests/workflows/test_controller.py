"""The workflow controller: DAG order and parallelism, Skipped, steps in order as child Runs,
expressions, job-local workspaces with affinity, artifacts between jobs, cancel, reusable
workflows, Action steps, and idempotence (every reconcile run twice gives the same state)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.machinery import store
from scheduling import run_status
from scheduling.models import Run
from tests.helpers.operator import OPERATOR
from tests.helpers.records import make_runtime
from workflows import controller
from workflows.models import WorkflowRun
from workflows.names import JOB_LABEL, STEP_LABEL, UID_LABEL, child_name
from workspaces.models import PersistentWorkspace

pytestmark = pytest.mark.django_db

API = "kruntimes.io/v1alpha1"


def kind(name):
    from portal.machinery.registry import registry

    return registry.for_manifest(API, name)


def step(name, run="true", **extra):
    return {"name": name, "run": run, **extra}


def job(*steps, needs=(), **extra):
    return {"runs-on": "bash", "needs": list(needs), "steps": list(steps), **extra}


def start(jobs, name="wfr", inputs=None, outputs=None) -> WorkflowRun:
    spec = {"jobs": jobs, "inputs": inputs or {}}
    if outputs:
        spec["outputs"] = outputs
    return store.create(
        kind("WorkflowRun"),
        {"apiVersion": API, "kind": "WorkflowRun", "metadata": {"name": name}, "spec": spec},
        namespace="default",
        context=OPERATOR,
    )


def make(kind_name, name, spec):
    return store.create(
        kind(kind_name),
        {"apiVersion": API, "kind": kind_name, "metadata": {"name": name}, "spec": spec},
        namespace="default",
        context=OPERATOR,
    )


@pytest.fixture(autouse=True)
def runtime():
    make_runtime()


def tick(wfr: WorkflowRun) -> WorkflowRun:
    """One reconcile, then the object as stored."""
    controller.reconcile(WorkflowRun.objects.get(pk=wfr.pk), timezone.now())
    return WorkflowRun.objects.get(pk=wfr.pk)


def settle(wfr: WorkflowRun, times: int = 4) -> WorkflowRun:
    for _ in range(times):
        wfr = tick(wfr)
    return wfr


def child(wfr, job_name, step_name, *more) -> Run | None:
    return Run.objects.filter(name=child_name(wfr.name, job_name, step_name, *more)).first()


def finish(run: Run, phase="Succeeded", outputs=None, artifacts=None, reason=""):
    status = {**(run.status or {}), "phase": phase}
    if outputs is not None:
        status["outputs"] = outputs
    if artifacts is not None:
        status["artifactRefs"] = artifacts
    if reason:
        status["reason"] = reason
    assert run_status.write(Run.objects.get(pk=run.pk), status, run_status.ANY)


def ref(name, uid="u1"):
    return {
        "name": name,
        "driver": "filesystem",
        "type": "file",
        "location": {"filesystem": {"path": f"namespaces/default/runs/{uid}/{name}"}},
        "sizeBytes": 3,
        "digest": "sha256:" + "a" * 64,
    }


def jobs_of(wfr):
    return {name: j["phase"] for name, j in wfr.status["jobs"].items()}


def test_jobs_start_when_their_needs_succeeded_and_run_in_parallel_otherwise():
    wfr = start(
        {
            "a": job(step("s")),
            "b": job(step("s"), needs=["a"]),
            "c": job(step("s"), needs=["a"]),
            "d": job(step("s"), needs=["b", "c"]),
        }
    )
    wfr = settle(wfr)
    assert jobs_of(wfr) == {"a": "Waiting", "b": "Pending", "c": "Pending", "d": "Pending"}
    assert [child(wfr, j, "s") is not None for j in "abcd"] == [True, False, False, False]
    finish(child(wfr, "a", "s"))
    wfr = settle(wfr)
    assert child(wfr, "b", "s") is not None and child(wfr, "c", "s") is not None  # parallel
    assert child(wfr, "d", "s") is None
    finish(child(wfr, "b", "s"))
    wfr = settle(wfr)
    assert child(wfr, "d", "s") is None  # c still runs
    finish(child(wfr, "c", "s"))
    wfr = settle(wfr)
    finish(child(wfr, "d", "s"))
    wfr = settle(wfr)
    assert wfr.phase == "Succeeded"
    assert set(jobs_of(wfr).values()) == {"Succeeded"}


def test_a_failed_job_skips_its_dependants_and_fails_the_run():
    wfr = settle(
        start(
            {
                "a": job(step("s")),
                "b": job(step("s"), needs=["a"]),
                "c": job(step("s"), needs=["b"]),
            }
        )
    )
    finish(child(wfr, "a", "s"), "Failed", reason="RuntimeExecute")
    wfr = settle(wfr)
    assert jobs_of(wfr) == {"a": "Failed", "b": "Skipped", "c": "Skipped"}
    assert wfr.phase == "Failed"
    assert wfr.status["message"].startswith("job a failed: step s: Run")
    assert child(wfr, "b", "s") is None and child(wfr, "c", "s") is None
    conditions = {c["type"]: c["status"] for c in wfr.status["conditions"]}
    assert conditions == {"Accepted": "True", "Completed": "True"}


def test_an_independent_job_still_finishes_before_the_run_fails():
    wfr = settle(start({"a": job(step("s")), "b": job(step("s"))}))
    finish(child(wfr, "a", "s"), "Failed")
    wfr = settle(wfr)
    assert wfr.phase == "Running"
    finish(child(wfr, "b", "s"))
    assert settle(wfr).phase == "Failed"


def test_steps_run_in_order_as_labelled_owned_child_runs_in_the_job_workspace():
    wfr = settle(start({"build": job(step("one"), step("two"), step("three"))}))
    first = child(wfr, "build", "one")
    assert child(wfr, "build", "two") is None
    assert first.labels == {UID_LABEL: str(wfr.uid), JOB_LABEL: "build", STEP_LABEL: "one"}
    owner = first.owner_references[0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("WorkflowRun", str(wfr.uid), True)
    workspace = child_name(wfr.name, "build")
    assert first.spec["workspace"]["name"] == workspace
    assert "affinity" not in first.spec
    steps = wfr.status["jobs"]["build"]["steps"]
    assert [(s["name"], s["phase"]) for s in steps] == [
        ("one", "Pending"),
        ("two", "Pending"),
        ("three", "Pending"),
    ]
    finish(first)
    wfr = settle(wfr)
    second = child(wfr, "build", "two")
    assert second.spec["workspace"]["name"] == workspace
    term = second.spec["affinity"]["runAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        0
    ]
    assert term["labelSelector"]["matchLabels"] == {UID_LABEL: str(wfr.uid), JOB_LABEL: "build"}
    assert term["topologyKey"] == "kruntimes.io/runtime-pod"


def test_the_job_workspace_is_made_once_owned_by_the_run_with_the_controllers_spec(settings):
    settings.KRUNTIMES_WORKFLOW_WORKSPACE_TTL_SECONDS = 123
    wfr = settle(start({"build": job(step("one"), step("two"))}))
    spaces = PersistentWorkspace.objects.filter(namespace="default")
    assert spaces.count() == 1
    ws = spaces.get()
    assert ws.name == child_name(wfr.name, "build")
    assert ws.spec == {
        "runtime": "bash",
        "ttlSecondsAfterUnused": 123,
        "cleanupPolicy": "DeleteAfterTTL",
        "mode": "RuntimePodLocal",
    }
    assert ws.labels == {UID_LABEL: str(wfr.uid), JOB_LABEL: "build"}
    assert ws.owner_references[0]["uid"] == str(wfr.uid)
    # no binding details (status.children names the workspace it made, as every child)
    shown = {key: value for key, value in wfr.status.items() if key != "children"}
    assert "persistentworkspace" not in str(shown).lower()


def test_a_lost_job_workspace_fails_the_job_with_a_message():
    wfr = settle(start({"build": job(step("one"), step("two"))}))
    ws = PersistentWorkspace.objects.get()
    PersistentWorkspace.objects.filter(pk=ws.pk).update(phase="Lost", status={"phase": "Lost"})
    wfr = settle(wfr)
    assert jobs_of(wfr) == {"build": "Failed"}
    assert "workspace was lost" in wfr.status["jobs"]["build"]["message"]
    assert wfr.phase == "Failed"


def test_expressions_resolve_inputs_earlier_steps_and_needed_jobs():
    wfr = settle(
        start(
            {
                "a": job(step("s"), outputs={"version": "${{ steps.s.outputs.v }}"}),
                "b": job(
                    step("first", "echo ${{ inputs.who }}"),
                    step(
                        "second",
                        "echo ${{ steps.first.outputs.greeting }} ${{ jobs.a.outputs.version }}",
                        args=["${{ inputs.who }}"],
                        env={"WHO": "${{ inputs.who }}"},
                    ),
                    needs=["a"],
                ),
            },
            inputs={"who": "world"},
            outputs={"final": {"value": "${{ jobs.a.outputs.version }}"}},
        )
    )
    finish(child(wfr, "a", "s"), outputs={"v": "1.2"})
    wfr = settle(wfr)
    assert wfr.status["jobs"]["a"]["outputs"] == {"version": "1.2"}
    first = child(wfr, "b", "first")
    assert first.spec["source"]["inline"] == "echo world"
    finish(first, outputs={"greeting": "hi"})
    wfr = settle(wfr)
    second = child(wfr, "b", "second")
    assert second.spec["source"]["inline"] == "echo hi 1.2"
    assert second.spec["mode"]["task"]["args"] == ["world"]
    assert second.spec["env"] == [{"name": "WHO", "value": "world"}]
    finish(second)
    wfr = settle(wfr)
    assert wfr.phase == "Succeeded"
    assert wfr.status["outputs"] == {"final": "1.2"}


def test_an_unresolvable_expression_fails_the_step_and_no_run_is_made():
    wfr = settle(
        start({"a": job(step("one"), step("two", "echo ${{ steps.one.outputs.missing }}"))})
    )
    finish(child(wfr, "a", "one"), outputs={})
    wfr = settle(wfr)
    assert child(wfr, "a", "two") is None
    assert jobs_of(wfr) == {"a": "Failed"}
    assert "steps.one.outputs.missing" in wfr.status["jobs"]["a"]["message"]
    assert wfr.status["jobs"]["a"]["steps"][1]["phase"] == "Failed"


def test_artifacts_pass_between_jobs_and_the_last_of_a_name_wins():
    wfr = settle(
        start(
            {
                "build": job(step("one"), step("two")),
                "deploy": job(
                    step(
                        "verify",
                        artifacts=[{"from": "jobs.build.artifacts.dist.tgz", "path": "d.tgz"}],
                    ),
                    needs=["build"],
                ),
            }
        )
    )
    finish(
        child(wfr, "build", "one"), artifacts=[ref("dist.tgz", "first"), ref("log.txt", "first")]
    )
    wfr = settle(wfr)
    assert "artifacts" not in wfr.status["jobs"]["build"]  # shown once the job succeeds
    finish(child(wfr, "build", "two"), artifacts=[ref("dist.tgz", "second")])
    wfr = settle(wfr)
    artifacts = wfr.status["jobs"]["build"]["artifacts"]
    assert sorted(artifacts) == ["dist.tgz", "log.txt"]
    assert "second" in artifacts["dist.tgz"]["location"]["filesystem"]["path"]
    verify = child(wfr, "deploy", "verify")
    assert verify.spec["artifactInputs"] == [{"ref": artifacts["dist.tgz"], "path": "d.tgz"}]
    assert "workflow" not in str(verify.spec).lower()  # the Run sees a generic input only


def test_a_missing_artifact_fails_the_consuming_job_at_once():
    wfr = settle(
        start(
            {
                "build": job(step("one")),
                "deploy": job(
                    step("verify", artifacts=[{"from": "jobs.build.artifacts.nope", "path": "x"}]),
                    needs=["build"],
                ),
            }
        )
    )
    finish(child(wfr, "build", "one"), artifacts=[])
    wfr = settle(wfr)
    assert jobs_of(wfr) == {"build": "Succeeded", "deploy": "Failed"}
    assert "produced no artifact named nope" in wfr.status["jobs"]["deploy"]["message"]
    assert child(wfr, "deploy", "verify") is None
    assert wfr.phase == "Failed"


def test_cancel_stops_running_children_skips_the_rest_and_ends_cancelled():
    wfr = settle(start({"a": job(step("s"), step("t")), "b": job(step("s"), needs=["a"])}))
    running = child(wfr, "a", "s")
    store.patch(
        kind("WorkflowRun"), "default", "wfr", {"spec": {"cancelRequested": True}}, context=OPERATOR
    )
    wfr = settle(wfr)
    assert Run.objects.get(pk=running.pk).cancel_requested is True
    assert wfr.phase == "Running"  # until the cancelled Run has ended
    finish(running, "Cancelled")
    wfr = settle(wfr)
    assert wfr.phase == "Cancelled"
    assert jobs_of(wfr) == {"a": "Failed", "b": "Skipped"}
    assert child(wfr, "a", "t") is None and child(wfr, "b", "s") is None


def test_a_reusable_workflow_job_runs_as_an_owned_child_workflow_run():
    make(
        "Workflow",
        "lib",
        {
            "inputs": {"target": {"type": "string", "required": True}},
            "outputs": {"where": {"value": "${{ jobs.inner.outputs.where }}"}},
            "jobs": {
                "inner": job(
                    step("go", "echo ${{ inputs.target }}"),
                    outputs={"where": "${{ steps.go.outputs.at }}"},
                )
            },
        },
    )
    wfr = settle(
        start(
            {
                "call": {"uses": "lib", "with": {"target": "${{ inputs.env }}"}},
                "after": job(step("s", "echo ${{ jobs.call.outputs.where }}"), needs=["call"]),
            },
            inputs={"env": "prod"},
        )
    )
    called = WorkflowRun.objects.get(name=child_name(wfr.name, "call"))
    assert called.spec["inputs"] == {"target": "prod"}
    assert called.spec["workflowRef"] == {"name": "lib"}
    assert called.owner_references[0]["uid"] == str(wfr.uid)
    assert wfr.status["jobs"]["call"]["workflowRunName"] == called.name
    called = settle(called)
    go = child(called, "inner", "go")
    assert go.spec["source"]["inline"] == "echo prod"
    assert PersistentWorkspace.objects.filter(name=child_name(called.name, "inner")).exists()
    finish(go, outputs={"at": "eu"})
    called = settle(called)
    assert called.phase == "Succeeded" and called.status["outputs"] == {"where": "eu"}
    wfr = settle(wfr)
    assert wfr.status["jobs"]["call"] == {
        "phase": "Succeeded",
        "workflowRunName": called.name,
        "outputs": {"where": "eu"},
    }
    assert child(wfr, "after", "s").spec["source"]["inline"] == "echo eu"


def test_an_action_step_expands_to_its_run_steps_in_order():
    make(
        "Action",
        "greet",
        {
            "inputs": {"who": {"type": "string", "required": True}},
            "outputs": {"said": {"value": "${{ steps.speak.outputs.text }}"}},
            "steps": [step("prepare", "echo ${{ inputs.who }}"), step("speak", "echo hi")],
        },
    )
    wfr = settle(
        start(
            {
                "j": job(
                    {"name": "hello", "uses": "greet", "with": {"who": "ann"}},
                    step("after", "echo ${{ steps.hello.outputs.said }}"),
                )
            }
        )
    )
    prepare = child(wfr, "j", "hello", "prepare")
    assert prepare.spec["source"]["inline"] == "echo ann"
    assert child(wfr, "j", "hello", "speak") is None
    finish(prepare)
    wfr = settle(wfr)
    finish(child(wfr, "j", "hello", "speak"), outputs={"text": "hi ann"})
    wfr = settle(wfr)
    hello = wfr.status["jobs"]["j"]["steps"][0]
    assert hello["phase"] == "Succeeded" and hello["outputs"] == {"said": "hi ann"}
    assert [s["name"] for s in hello["actionSteps"]] == ["prepare", "speak"]
    assert child(wfr, "j", "after").spec["source"]["inline"] == "echo hi ann"


def test_a_missing_action_fails_the_step():
    wfr = settle(start({"j": job({"name": "x", "uses": "nope"})}))
    assert jobs_of(wfr) == {"j": "Failed"}
    assert 'Action "nope" not found' in wfr.status["jobs"]["j"]["message"]


def test_every_reconcile_run_twice_gives_the_same_state():
    wfr = start({"a": job(step("s"), step("t")), "b": job(step("s"), needs=["a"])})
    for advance in (
        lambda w: None,
        lambda w: finish(child(w, "a", "s")),
        lambda w: finish(child(w, "a", "t")),
        lambda w: finish(child(w, "b", "s")),
    ):
        advance(wfr)
        wfr = tick(wfr)
        runs = sorted(Run.objects.values_list("name", "resource_version"))
        spaces = PersistentWorkspace.objects.count()
        again = tick(wfr)
        assert again.status == wfr.status
        assert again.resource_version == wfr.resource_version  # no write at all
        assert sorted(Run.objects.values_list("name", "resource_version")) == runs
        assert PersistentWorkspace.objects.count() == spaces
        wfr = again
    assert wfr.phase == "Succeeded"


def test_a_child_run_ending_wakes_the_controller(django_capture_on_commit_callbacks):
    wfr = settle(start({"a": job(step("one"), step("two"))}))
    with django_capture_on_commit_callbacks(execute=True):
        finish(child(wfr, "a", "one"))
    assert child(wfr, "a", "two") is not None


def test_the_status_the_controller_writes_is_valid_on_the_api():
    from portal.machinery.serializers import validate_with

    make(
        "Action",
        "greet",
        {
            "outputs": {"said": {"value": "${{ steps.speak.outputs.text }}"}},
            "steps": [step("speak")],
        },
    )
    wfr = settle(
        start(
            {
                "build": job({"name": "hello", "uses": "greet"}, step("pack")),
                "deploy": job(
                    step("use", artifacts=[{"from": "jobs.build.artifacts.dist.tgz", "path": "d"}]),
                    needs=["build"],
                ),
                "never": job(step("s"), needs=["deploy"]),
            }
        )
    )
    finish(child(wfr, "build", "hello", "speak"), outputs={"text": "hi"})
    wfr = settle(wfr)
    finish(child(wfr, "build", "pack"), artifacts=[ref("dist.tgz")])
    wfr = settle(wfr)
    finish(child(wfr, "deploy", "use"), "Failed", reason="RuntimeExecute")
    wfr = settle(wfr)
    assert wfr.phase == "Failed"
    _, causes = validate_with(kind("WorkflowRun").body["status"], wfr.status, "status")
    assert causes == []


def test_computing_a_pass_writes_nothing_and_plans_the_children_in_order():
    wfr = start({"a": job(step("s"), step("t"))})
    runs_before = Run.objects.count()
    reconciler = controller.Reconciler(
        WorkflowRun.objects.get(pk=wfr.pk), timezone.now(), controller.load_children(wfr)
    )
    status = reconciler.status()
    assert Run.objects.count() == runs_before
    assert not PersistentWorkspace.objects.filter(name=child_name("wfr", "a")).exists()
    planned = [(w.verb, w.kind, w.name) for w in reconciler.planned]
    assert planned == [
        ("create", "PersistentWorkspace", child_name("wfr", "a")),
        ("create", "Run", child_name("wfr", "a", "s")),
    ]
    assert status["jobs"]["a"]["steps"][0]["phase"] == "Pending"


def test_a_child_the_api_refuses_fails_its_step_in_the_same_pass(monkeypatch):
    from portal.machinery import errors

    wfr = start({"a": job(step("s"))})
    real_create = store.create

    def refuse_runs(kind, body, **kwargs):
        if body["kind"] == "Run":
            raise errors.forbidden_status("refused for the test")
        return real_create(kind, body, **kwargs)

    monkeypatch.setattr(store, "create", refuse_runs)
    wfr = tick(wfr)
    assert jobs_of(wfr) == {"a": "Failed"}
    assert "refused for the test" in wfr.status["jobs"]["a"]["message"]
    # the workspace planned before it was made, once
    assert PersistentWorkspace.objects.filter(name=child_name("wfr", "a")).count() == 1
