"""Run.spec admission: every field's type, bound and cross-field rule (API.md, seeds 000-002).

Each case merges a patch (RFC 7386: ``None`` deletes) into a valid task Run and asserts either
that it is stored or the exact ``field -> reason`` causes of the 422.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command

from portal.machinery.manifest import merge_patch as apply_merge
from scheduling.models import Run
from tests.helpers.runs import (
    DUP,
    FORB,
    INV,
    LONG,
    MANY,
    NSUP,
    REQ,
    TYPE,
    artifact_ref,
    causes,
    run_manifest,
    runs_url,
    runtime_manifest,
    runtimes_url,
    term,
    weighted,
)
from tests.helpers.workspaces import make_workspace

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def workspaces():
    """The workspaces the Runs here reference: a Run may reference only one that exists
    (workspaces/review.py)."""
    make_workspace("ci-build-workspace")
    make_workspace(subdomain(253))


OK = None
REQ_TERMS = "spec.affinity.runAffinity.requiredDuringSchedulingIgnoredDuringExecution"
PREF_TERMS = "spec.affinity.runAffinity.preferredDuringSchedulingIgnoredDuringExecution"


def fn(**source) -> dict:
    """A function-mode patch with the given source."""
    return {"mode": {"task": None, "function": {"handler": "main.handle"}}, "source": source}


def inline_fn(path: str) -> dict:
    return fn(inline="def handle(): pass", inlinePath=path)


def affinity(required=(), preferred=(), rules: str = "runAffinity") -> dict:
    body = {}
    if required:
        body["requiredDuringSchedulingIgnoredDuringExecution"] = list(required)
    if preferred:
        body["preferredDuringSchedulingIgnoredDuringExecution"] = list(preferred)
    return {"affinity": {rules: body}}


def selector(sel) -> dict:
    return affinity([{"labelSelector": sel, "topologyKey": "kruntimes.io/runtime-pod"}])


def ref_input(path: str = "inputs/report.txt", **ref) -> dict:
    return {"artifactInputs": [{"ref": {**artifact_ref(), **ref}, "path": path}]}


def subdomain(length: int) -> str:
    labels, left = [], length
    while left > 0:
        take = min(63, left)
        labels.append("a" * take)
        left -= take + 1
    name = ".".join(labels)
    return name[:length] if len(name) >= length else name + "a" * (length - len(name))


REPO = {"repoURL": "https://git.example.com/app.git"}


def repo_task(**task) -> dict:
    """A task Run from a repository (its entrypoint is checked; an inline one's is not)."""
    return {"source": dict(REPO), "mode": {"task": task}}


def case(id_: str, patch: dict, expected: dict | None):
    return pytest.param(patch, expected, id=id_)


CASES = [
    case("minimal-task", {}, OK),
    case("unknown-field", {"commands": ["echo"]}, {"spec.commands": FORB}),
    # runtime: required, <=63, label-value syntax
    case("runtime-63", {"runtime": "r" * 63}, OK),
    case("runtime-64", {"runtime": "r" * 64}, {"spec.runtime": LONG}),
    case("runtime-syntax", {"runtime": "-bash"}, {"spec.runtime": INV}),
    case("runtime-missing", {"runtime": None}, {"spec.runtime": REQ}),
    case("runtime-not-string", {"runtime": 5}, {"spec.runtime": TYPE}),
    # source: inline xor repoURL, bounds, commitSHA needs repoURL
    case("inline-262144", {"source": {"inline": "x" * 262144}}, OK),
    case("inline-262145", {"source": {"inline": "x" * 262145}}, {"spec.source.inline": LONG}),
    case("repo-2048", {"source": {"repoURL": "h" * 2048}}, OK),
    case("repo-2049", {"source": {"repoURL": "h" * 2049}}, {"spec.source.repoURL": LONG}),
    case("sha-256", {"source": {"repoURL": "https://g/r.git", "commitSHA": "c" * 256}}, OK),
    case(
        "sha-257",
        {"source": {"repoURL": "https://g/r.git", "commitSHA": "c" * 257}},
        {"spec.source.commitSHA": LONG},
    ),
    case(
        "inline-and-repo",
        {"source": {"inline": "echo", "repoURL": "https://g/r.git"}},
        {"spec.source": INV},
    ),
    case("source-empty", {"source": {}}, {"spec.source": INV}),
    case(
        "sha-without-repo",
        {"source": {"inline": "echo", "commitSHA": "abc"}},
        {"spec.source.commitSHA": FORB},
    ),
    # mode: exactly one of task / function
    case("mode-empty", {"mode": {"task": None}}, {"spec.mode": INV}),
    case("mode-both", {"source": dict(REPO), "mode": {"function": {}}}, {"spec.mode": INV}),
    case("mode-missing", {"mode": None}, {"spec.mode": REQ}),
    case("args-256", {"mode": {"task": {"args": ["a"] * 256}}}, OK),
    case("args-257", {"mode": {"task": {"args": ["a"] * 257}}}, {"spec.mode.task.args": MANY}),
    case("arg-8192", {"mode": {"task": {"args": ["a" * 8192]}}}, OK),
    case(
        "arg-8193",
        {"mode": {"task": {"args": ["ok", "a" * 8193]}}},
        {"spec.mode.task.args[1]": LONG},
    ),
    case("handler", fn(repoURL="https://g/r.git"), OK),
    case(
        "handler-512",
        {
            **fn(repoURL="https://g/r.git"),
            "mode": {"task": None, "function": {"handler": "m." + "f" * 510}},
        },
        OK,
    ),
    case(
        "handler-513",
        {
            **fn(repoURL="https://g/r.git"),
            "mode": {"task": None, "function": {"handler": "m." + "f" * 511}},
        },
        {"spec.mode.function.handler": LONG},
    ),
    case(
        "handler-no-dot",
        {
            **fn(repoURL="https://g/r.git"),
            "mode": {"task": None, "function": {"handler": "handle"}},
        },
        {"spec.mode.function.handler": INV},
    ),
    case(
        "idle-timeout-0",
        {
            **fn(repoURL="https://g/r.git"),
            "mode": {"task": None, "function": {"idleTimeoutSeconds": 0}},
        },
        OK,
    ),
    case(
        "idle-timeout-negative",
        {
            **fn(repoURL="https://g/r.git"),
            "mode": {"task": None, "function": {"idleTimeoutSeconds": -1}},
        },
        {"spec.mode.function.idleTimeoutSeconds": INV},
    ),
    # task entrypoint: relative, no ".." segment; not checked with inline source
    case("entrypoint-plain", repo_task(entrypoint="scripts/build.sh"), OK),
    case("entrypoint-dot-slash", repo_task(entrypoint="./run.sh"), OK),
    case(
        "entrypoint-absolute", repo_task(entrypoint="/run.sh"), {"spec.mode.task.entrypoint": INV}
    ),
    case(
        "entrypoint-dotdot", repo_task(entrypoint="a/../run.sh"), {"spec.mode.task.entrypoint": INV}
    ),
    case(
        "entrypoint-leading-dotdot",
        repo_task(entrypoint="../run.sh"),
        {"spec.mode.task.entrypoint": INV},
    ),
    case("entrypoint-4096", repo_task(entrypoint="e" * 4096), OK),
    case("entrypoint-4097", repo_task(entrypoint="e" * 4097), {"spec.mode.task.entrypoint": LONG}),
    case(
        "entrypoint-absolute-inline-exempt",
        {"source": {"inline": "echo"}, "mode": {"task": {"entrypoint": "/run.sh"}}},
        OK,
    ),
    case(
        "entrypoint-dotdot-inline-exempt",
        {"source": {"inline": "echo"}, "mode": {"task": {"entrypoint": "../run.sh"}}},
        OK,
    ),
    # inlinePath: required for function+inline, forbidden otherwise, clean relative path
    case("inline-path", inline_fn("pkg/main.py"), OK),
    case("inline-path-missing", fn(inline="def handle(): pass"), {"spec.source.inlinePath": REQ}),
    case(
        "inline-path-task",
        {"source": {"inline": "echo", "inlinePath": "main.sh"}},
        {"spec.source.inlinePath": FORB},
    ),
    case(
        "inline-path-repo",
        fn(repoURL="https://g/r.git", inlinePath="main.py"),
        {"spec.source.inlinePath": FORB},
    ),
    case("inline-path-absolute", inline_fn("/main.py"), {"spec.source.inlinePath": INV}),
    case("inline-path-empty-segment", inline_fn("a//main.py"), {"spec.source.inlinePath": INV}),
    case("inline-path-dot", inline_fn("./main.py"), {"spec.source.inlinePath": INV}),
    case("inline-path-dotdot", inline_fn("a/../main.py"), {"spec.source.inlinePath": INV}),
    case("inline-path-4097", inline_fn("p" * 4097), {"spec.source.inlinePath": LONG}),
    # workspace reference
    case("workspace-name-253", {"workspace": {"name": subdomain(253)}}, OK),
    case(
        "workspace-name-254", {"workspace": {"name": subdomain(254)}}, {"spec.workspace.name": LONG}
    ),
    case(
        "workspace-name-syntax", {"workspace": {"name": "Build_WS"}}, {"spec.workspace.name": INV}
    ),
    case(
        "workspace-name-missing",
        {"workspace": {"kind": "PersistentWorkspace"}},
        {"spec.workspace.name": REQ},
    ),
    case(
        "workspace-kind",
        {"workspace": {"name": "ws", "kind": "Volume"}},
        {"spec.workspace.kind": NSUP},
    ),
    case(
        "workspace-api-group",
        {"workspace": {"name": "ws", "apiGroup": "kruntimes.io/v1"}},
        {"spec.workspace.apiGroup": NSUP},
    ),
    case(
        "workspace-namespace",
        {"workspace": {"name": "ws", "namespace": "other"}},
        {"spec.workspace.namespace": FORB},
    ),
    # affinity: bounded term lists, weights 1..100, non-empty selector, one topology key
    case("required-32", affinity([term()] * 32), OK),
    case("required-33", affinity([term()] * 33), {REQ_TERMS: MANY}),
    case("preferred-32", affinity(preferred=[weighted()] * 32), OK),
    case("preferred-33", affinity(preferred=[weighted()] * 33), {PREF_TERMS: MANY}),
    case(
        "anti-required-33",
        affinity([term()] * 33, rules="runAntiAffinity"),
        {REQ_TERMS.replace("runAffinity", "runAntiAffinity"): MANY},
    ),
    case(
        "anti-preferred-33",
        affinity(preferred=[weighted()] * 33, rules="runAntiAffinity"),
        {PREF_TERMS.replace("runAffinity", "runAntiAffinity"): MANY},
    ),
    case("weight-0", affinity(preferred=[weighted(0)]), {f"{PREF_TERMS}[0].weight": INV}),
    case("weight-1", affinity(preferred=[weighted(1)]), OK),
    case("weight-100", affinity(preferred=[weighted(100)]), OK),
    case("weight-101", affinity(preferred=[weighted(101)]), {f"{PREF_TERMS}[0].weight": INV}),
    case("weight-string", affinity(preferred=[weighted("5")]), {f"{PREF_TERMS}[0].weight": TYPE}),
    case(
        "topology-key-other",
        affinity([{**term(), "topologyKey": "kubernetes.io/hostname"}]),
        {f"{REQ_TERMS}[0].topologyKey": NSUP},
    ),
    case(
        "topology-key-missing",
        affinity([{"labelSelector": {"matchLabels": {"a": "b"}}}]),
        {f"{REQ_TERMS}[0].topologyKey": REQ},
    ),
    case("selector-empty", selector({}), {f"{REQ_TERMS}[0].labelSelector": INV}),
    case(
        "selector-empty-maps",
        selector({"matchLabels": {}, "matchExpressions": []}),
        {f"{REQ_TERMS}[0].labelSelector": INV},
    ),
    case(
        "selector-missing",
        affinity([{"topologyKey": "kruntimes.io/runtime-pod"}]),
        {f"{REQ_TERMS}[0].labelSelector": REQ},
    ),
    case(
        "selector-expressions",
        selector({"matchExpressions": [{"key": "job", "operator": "In", "values": ["build"]}]}),
        OK,
    ),
    case(
        "selector-bad-operator",
        selector({"matchExpressions": [{"key": "job", "operator": "Near", "values": ["x"]}]}),
        {f"{REQ_TERMS}[0].labelSelector.matchExpressions[0].operator": NSUP},
    ),
    case(
        "selector-bad-value",
        selector({"matchLabels": {"job": "not valid!"}}),
        {f"{REQ_TERMS}[0].labelSelector.matchLabels[job]": INV},
    ),
    case(
        "preferred-inner-selector-empty",
        affinity(preferred=[{"weight": 5, "runAffinityTerm": {**term(), "labelSelector": {}}}]),
        {f"{PREF_TERMS}[0].runAffinityTerm.labelSelector": INV},
    ),
    case(
        "affinity-unknown", {"affinity": {"nodeAffinity": {}}}, {"spec.affinity.nodeAffinity": FORB}
    ),
    # resources.requests: non-negative quantities, fractions admitted
    case(
        "request-negative",
        {"resources": {"requests": {"gpu": "-1"}}},
        {"spec.resources.requests.gpu": INV},
    ),
    case(
        "request-garbage",
        {"resources": {"requests": {"gpu": "lots"}}},
        {"spec.resources.requests.gpu": INV},
    ),
    case(
        "request-bad-name",
        {"resources": {"requests": {"bad name": 1}}},
        {"spec.resources.requests.bad name": INV},
    ),
    # env
    case("env-256", {"env": [{"name": f"V{i}", "value": "x"} for i in range(256)]}, OK),
    case(
        "env-257",
        {"env": [{"name": f"V{i}", "value": "x"} for i in range(257)]},
        {"spec.env": MANY},
    ),
    case("env-name-missing", {"env": [{"value": "x"}]}, {"spec.env[0].name": REQ}),
    case(
        "env-duplicate",
        {"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]},
        {"spec.env[1].name": DUP},
    ),
    case("env-name-equals", {"env": [{"name": "A=B"}]}, {"spec.env[0].name": INV}),
    case("env-value-number", {"env": [{"name": "A", "value": 1}]}, {"spec.env[0].value": TYPE}),
    case(
        "env-value-from", {"env": [{"name": "A", "valueFrom": {}}]}, {"spec.env[0].valueFrom": FORB}
    ),
    # timeout: a Go duration > 0
    case("timeout-30s", {"timeout": "30s"}, OK),
    case("timeout-compound", {"timeout": "1h30m"}, OK),
    case("timeout-zero", {"timeout": "0s"}, {"spec.timeout": INV}),
    case("timeout-negative", {"timeout": "-5m"}, {"spec.timeout": INV}),
    case("timeout-no-unit", {"timeout": "30"}, {"spec.timeout": INV}),
    case("timeout-number", {"timeout": 30}, {"spec.timeout": TYPE}),
    case("cancel-string", {"cancelRequested": "true"}, {"spec.cancelRequested": TYPE}),
    # retryPolicy
    case("attempts-0", {"retryPolicy": {"maxAttempts": 0}}, {"spec.retryPolicy.maxAttempts": INV}),
    case("attempts-1", {"retryPolicy": {"maxAttempts": 1}}, OK),
    case("attempts-100", {"retryPolicy": {"maxAttempts": 100, "backoff": "10s"}}, OK),
    case(
        "attempts-101", {"retryPolicy": {"maxAttempts": 101}}, {"spec.retryPolicy.maxAttempts": INV}
    ),
    case("backoff-bad", {"retryPolicy": {"backoff": "soon"}}, {"spec.retryPolicy.backoff": INV}),
    case("reasons-32", {"retryPolicy": {"retryableReasons": ["R"] * 32}}, OK),
    case(
        "reasons-33",
        {"retryPolicy": {"retryableReasons": ["R"] * 33}},
        {"spec.retryPolicy.retryableReasons": MANY},
    ),
    case(
        "reason-129",
        {"retryPolicy": {"retryableReasons": ["R" * 129]}},
        {"spec.retryPolicy.retryableReasons[0]": LONG},
    ),
    case("ttl-0", {"ttlSecondsAfterFinished": 0}, OK),
    case("ttl-negative", {"ttlSecondsAfterFinished": -1}, {"spec.ttlSecondsAfterFinished": INV}),
    # artifactInputs: ArtifactRef + clean relative destination
    case("input", ref_input(), OK),
    case("input-s3", {"artifactInputs": [{"ref": artifact_ref(driver="s3"), "path": "in"}]}, OK),
    case("inputs-32", {"artifactInputs": ref_input()["artifactInputs"] * 32}, OK),
    case(
        "inputs-33",
        {"artifactInputs": ref_input()["artifactInputs"] * 33},
        {"spec.artifactInputs": MANY},
    ),
    case("input-path-absolute", ref_input("/etc/x"), {"spec.artifactInputs[0].path": INV}),
    case("input-path-dotdot", ref_input("in/../../x"), {"spec.artifactInputs[0].path": INV}),
    case("input-path-dot", ref_input("in/./x"), {"spec.artifactInputs[0].path": INV}),
    case(
        "input-path-missing",
        {"artifactInputs": [{"ref": artifact_ref()}]},
        {"spec.artifactInputs[0].path": REQ},
    ),
    case(
        "input-ref-driver-mismatch",
        ref_input(driver="s3"),
        {
            "spec.artifactInputs[0].ref.location.s3": REQ,
            "spec.artifactInputs[0].ref.location.filesystem": FORB,
        },
    ),
    case(
        "input-ref-two-locations",
        ref_input(location={"filesystem": {"path": "p"}, "s3": {"bucket": "b", "key": "k"}}),
        {"spec.artifactInputs[0].ref.location.s3": FORB},
    ),
    case(
        "input-ref-no-location",
        ref_input(location={}),
        {"spec.artifactInputs[0].ref.location.filesystem": REQ},
    ),
    case("input-ref-name-255-bytes", ref_input(name="é" * 127 + "a"), OK),
    case(
        "input-ref-name-256-bytes",
        ref_input(name="é" * 128),
        {"spec.artifactInputs[0].ref.name": LONG},
    ),
    case("input-ref-name-path", ref_input(name="a/b"), {"spec.artifactInputs[0].ref.name": INV}),
    case("input-ref-name-dotdot", ref_input(name=".."), {"spec.artifactInputs[0].ref.name": INV}),
    case("input-ref-name-dot", ref_input(name="."), {"spec.artifactInputs[0].ref.name": INV}),
    case(
        "input-ref-name-backslash",
        ref_input(name="back\\slash"),
        {"spec.artifactInputs[0].ref.name": INV},
    ),
    case("input-ref-name-nul", ref_input(name="a\x00b"), {"spec.artifactInputs[0].ref.name": INV}),
    case("input-ref-name-empty", ref_input(name=""), {"spec.artifactInputs[0].ref.name": REQ}),
    case("input-ref-name-dots-inside", ref_input(name="a..b"), OK),
    # ref locations: relative, and inside the store's root once cleaned
    case(
        "input-ref-fs-path-inner-dotdot",
        ref_input(location={"filesystem": {"path": "namespaces/default/runs/u/../u/report"}}),
        OK,
    ),
    case(
        "input-ref-fs-path-absolute",
        ref_input(location={"filesystem": {"path": "/tmp/report"}}),
        {"spec.artifactInputs[0].ref.location.filesystem.path": INV},
    ),
    case(
        "input-ref-fs-path-escaping",
        ref_input(location={"filesystem": {"path": "a/../../escape"}}),
        {"spec.artifactInputs[0].ref.location.filesystem.path": INV},
    ),
    case(
        "input-ref-fs-path-root",
        ref_input(location={"filesystem": {"path": "a/.."}}),
        {"spec.artifactInputs[0].ref.location.filesystem.path": INV},
    ),
    case(
        "input-ref-s3-key-absolute",
        ref_input(driver="s3", location={"s3": {"bucket": "b", "key": "/tmp/report"}}),
        {"spec.artifactInputs[0].ref.location.s3.key": INV},
    ),
    case(
        "input-ref-s3-key-escaping",
        ref_input(driver="s3", location={"s3": {"bucket": "b", "key": "a/../../escape"}}),
        {"spec.artifactInputs[0].ref.location.s3.key": INV},
    ),
    # source is optional: the Runtime interprets the args, or runs a file of the workspace
    case("source-missing", {"source": None}, OK),
    case("source-missing-args-only", {"source": None, "mode": {"task": {"args": ["make"]}}}, OK),
    case(
        "source-missing-entrypoint-only",
        {"source": None, "mode": {"task": {"entrypoint": "ci/build.sh"}}},
        OK,
    ),
    case(
        "source-missing-entrypoint-escaping",
        {"source": None, "mode": {"task": {"entrypoint": "../build.sh"}}},
        {"spec.mode.task.entrypoint": INV},
    ),
    case(
        "function-without-source",
        {"source": None, "mode": {"task": None, "function": {"handler": "main.handle"}}},
        OK,
    ),
    # every rule an object breaks is its own cause
    case(
        "inline-path-without-inline",
        fn(inlinePath="main.py"),
        {"spec.source": INV, "spec.source.inlinePath": FORB},
    ),
    case(
        "three-rules",
        {
            "runtime": "-bash",
            "source": {"inlinePath": "main.py"},
            "mode": {"task": None, "function": {"handler": "main.handle"}},
        },
        {"spec.runtime": INV, "spec.source": INV, "spec.source.inlinePath": FORB},
    ),
    case(
        "field-and-cross-field",
        {"timeout": "soon", "source": {"inline": "x", "repoURL": "y"}},
        {"spec.timeout": INV, "spec.source": INV},
    ),
    case(
        "nested-and-sibling",
        {
            "retryPolicy": {"maxAttempts": 0},
            "mode": {"task": {"entrypoint": "/abs", "args": [1]}},
            "source": dict(REPO),
        },
        {
            "spec.retryPolicy.maxAttempts": INV,
            "spec.mode.task.args[0]": TYPE,
            "spec.mode.task.entrypoint": INV,
        },
    ),
    case(
        "input-ref-digest",
        ref_input(digest="sha256:abc"),
        {"spec.artifactInputs[0].ref.digest": INV},
    ),
    case("input-ref-type", ref_input(type="tarball"), {"spec.artifactInputs[0].ref.type": NSUP}),
    case("input-ref-driver", ref_input(driver="gcs"), {"spec.artifactInputs[0].ref.driver": NSUP}),
    case("input-ref-size", ref_input(sizeBytes=-1), {"spec.artifactInputs[0].ref.sizeBytes": INV}),
    case(
        "input-ref-content-type-256",
        ref_input(contentType="t" * 256),
        {"spec.artifactInputs[0].ref.contentType": LONG},
    ),
    case(
        "input-ref-fs-path-missing",
        ref_input(location={"filesystem": {"volumeClaimName": "v"}}),
        {"spec.artifactInputs[0].ref.location.filesystem.path": REQ},
    ),
    case(
        "input-ref-s3-bucket-256",
        ref_input(driver="s3", location={"s3": {"bucket": "b" * 256, "key": "k"}}),
        {"spec.artifactInputs[0].ref.location.s3.bucket": LONG},
    ),
    case(
        "input-ref-created",
        ref_input(createdAt="yesterday"),
        {"spec.artifactInputs[0].ref.createdAt": INV},
    ),
]


@pytest.mark.parametrize(("patch", "expected"), CASES)
def test_run_spec_admission(admin_api, patch, expected):
    manifest = run_manifest()
    if "source" in patch:  # a patch's source replaces the default inline one
        manifest["spec"].pop("source")
    manifest["spec"] = apply_merge(manifest["spec"], patch)
    response = admin_api.post(runs_url(), manifest, format="json")
    if expected is OK:
        assert response.status_code == 201, response.json()
        assert Run.objects.filter(name="r").exists()
    else:
        assert causes(response) == expected
        assert not Run.objects.exists()


def _created_spec(admin_api, **spec) -> dict:
    response = admin_api.post(runs_url(), run_manifest(**spec), format="json")
    assert response.status_code == 201, response.json()
    return response.json()["spec"]


@pytest.mark.parametrize(
    "workspace",
    [
        pytest.param({"name": "ci-build-workspace"}, id="short"),
        pytest.param(
            {
                "name": "ci-build-workspace",
                "kind": "PersistentWorkspace",
                "apiGroup": "kruntimes.io/v1alpha1",
            },
            id="explicit",
        ),
    ],
)
def test_workspace_reference_forms_are_stored_identically(admin_api, workspace):
    spec = _created_spec(admin_api, workspace=workspace)
    assert spec["workspace"] == {
        "name": "ci-build-workspace",
        "kind": "PersistentWorkspace",
        "apiGroup": "kruntimes.io/v1alpha1",
    }
    assert Run.objects.get(name="r").spec["workspace"] == spec["workspace"]


@pytest.mark.parametrize(
    ("resources", "stored"),
    [
        pytest.param(None, {"requests": {"runs": 1}}, id="omitted"),
        pytest.param({}, {"requests": {"runs": 1}}, id="empty"),
        pytest.param(
            {"requests": {"gpu": 2}}, {"requests": {"gpu": 2, "runs": 1}}, id="runs-filled"
        ),
        pytest.param({"requests": {"runs": 3}}, {"requests": {"runs": 3}}, id="runs-kept"),
        pytest.param(
            {"requests": {"runs": "0.5"}}, {"requests": {"runs": "0.5"}}, id="half-string"
        ),
        pytest.param({"requests": {"runs": 0.5}}, {"requests": {"runs": 0.5}}, id="half-number"),
        pytest.param(
            {"requests": {"cpu": "500m"}}, {"requests": {"cpu": "500m", "runs": 1}}, id="milli"
        ),
        # zero quantities are dropped; runs falls back to 1, so every Run takes a run slot
        pytest.param({"requests": {"runs": 0}}, {"requests": {"runs": 1}}, id="runs-zero"),
        pytest.param({"requests": {"runs": "0"}}, {"requests": {"runs": 1}}, id="runs-zero-string"),
        pytest.param({"requests": {"runs": "0m"}}, {"requests": {"runs": 1}}, id="runs-zero-milli"),
        pytest.param(
            {"requests": {"example.com/gpu": 0}}, {"requests": {"runs": 1}}, id="gpu-zero"
        ),
        pytest.param(
            {"requests": {"example.com/gpu": "0", "runs": 2}},
            {"requests": {"runs": 2}},
            id="gpu-zero-runs-kept",
        ),
        pytest.param(
            {"requests": {"example.com/gpu": 1, "runs": 0}},
            {"requests": {"example.com/gpu": 1, "runs": 1}},
            id="gpu-kept-runs-zero",
        ),
    ],
)
def test_resource_requests_default_and_fractions_admitted(admin_api, resources, stored):
    spec = {} if resources is None else {"resources": resources}
    assert _created_spec(admin_api, **spec)["resources"] == stored
    assert Run.objects.get(name="r").requests == stored["requests"]


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        pytest.param("10", True, id="positive"),
        pytest.param("-3", True, id="negative"),
        pytest.param("2147483647", True, id="int32-max"),
        pytest.param("2147483648", False, id="int32-overflow"),
        pytest.param("high", False, id="word"),
        pytest.param("1.5", False, id="fraction"),
        pytest.param("", False, id="empty"),
    ],
)
def test_priority_annotation_must_be_an_integer(admin_api, value, ok):
    manifest = run_manifest(metadata={"annotations": {"scheduling.kruntimes.io/priority": value}})
    response = admin_api.post(runs_url(), manifest, format="json")
    if ok:
        assert response.status_code == 201, response.json()
        assert Run.objects.get(name="r").priority == int(value)
    else:
        assert causes(response) == {"metadata.annotations[scheduling.kruntimes.io/priority]": INV}


SEED_RUN = """\
apiVersion: kruntimes.io/v1alpha1
kind: Run
metadata:
  name: ci-build-test
  labels:
    workflows.kruntimes.io/workflow: ci-data-sharing-demo
    workflows.kruntimes.io/job: build
spec:
  runtime: bash
  workspace:
    name: ci-build-workspace
  affinity:
    runAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector:
            matchLabels:
              workflows.kruntimes.io/workflow: ci-data-sharing-demo
              workflows.kruntimes.io/job: build
          topologyKey: kruntimes.io/runtime-pod
  mode:
    task: {}
"""


def test_seed_example_run_applies_unchanged(admin_api, tmp_path, capsys):
    assert (
        admin_api.post(runtimes_url(), runtime_manifest("bash"), format="json").status_code == 201
    )
    path = tmp_path / "run.yaml"
    path.write_text(SEED_RUN)  # verbatim: no source, no args
    call_command("apply", "-f", str(path))
    call_command("apply", "-f", str(path))
    out = capsys.readouterr().out
    assert out == (
        "runs.kruntimes.io/ci-build-test created\nruns.kruntimes.io/ci-build-test unchanged\n"
    )
    run = Run.objects.get(namespace="default", name="ci-build-test")
    assert run.spec["workspace"] == {
        "name": "ci-build-workspace",
        "kind": "PersistentWorkspace",
        "apiGroup": "kruntimes.io/v1alpha1",
    }
    assert (
        run.spec["affinity"]["runAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
            "topologyKey"
        ]
        == "kruntimes.io/runtime-pod"
    )
    assert run.spec["mode"] == {"task": {}}
    assert "source" not in run.spec
    assert (run.runtime, run.phase, run.generation) == ("bash", "Pending", 1)


def test_a_run_with_neither_source_nor_args_is_admitted(admin_api):
    """Whether a file is there to run is known only on the pod (runtimed.command)."""
    manifest = run_manifest(name="nothing")
    del manifest["spec"]["source"]
    manifest["spec"]["mode"] = {"task": {}}
    manifest["spec"]["retryPolicy"] = {"maxAttempts": 3}
    response = admin_api.post(runs_url(), manifest, format="json")
    assert response.status_code == 201, response.json()
    assert "source" not in response.json()["spec"]


def test_metadata_and_spec_problems_are_reported_together(admin_api):
    manifest = run_manifest(name="Bad_Name", runtime="-bash")
    manifest["spec"]["mode"] = {}
    response = admin_api.post(runs_url(), manifest, format="json")
    assert causes(response) == {"metadata.name": INV, "spec.runtime": INV, "spec.mode": INV}
    assert len(response.json()["details"]["causes"]) == 3
    assert not Run.objects.exists()
