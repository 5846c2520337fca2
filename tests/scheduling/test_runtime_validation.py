"""Runtime admission (template, port, replicas, capacity, artifact store, workspace volume),
its status, and how both scheduling kinds are served (short names, printer columns)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from portal.machinery.manifest import merge_patch as apply_merge
from scheduling.models import Runtime
from tests.helpers.runs import (
    API_VERSION,
    DUP,
    FORB,
    INV,
    LONG,
    MANY,
    NSUP,
    REQ,
    TYPE,
    causes,
    merge_patch,
    run_manifest,
    runs_url,
    runtime_manifest,
    runtimes_url,
)

pytestmark = pytest.mark.django_db

OK = None
POD = "spec.template.spec"
C0 = f"{POD}.containers[0]"
FS_STORE = {"driver": "filesystem", "filesystem": {"volumeClaimName": "artifacts"}}
S3_STORE = {"driver": "s3", "s3": {"bucket": "ci-artifacts"}}


def pod(**spec) -> dict:
    """A template patch: merged into the valid pod spec."""
    return {"template": {"spec": spec}}


def container(**fields) -> dict:
    return pod(containers=[{"name": "runtime", "image": "bash:5.2", **fields}])


def s3(**fields) -> dict:
    return {"artifactStore": {"driver": "s3", "s3": {"bucket": "ci-artifacts", **fields}}}


def case(id_: str, patch: dict, expected: dict | None):
    return pytest.param(patch, expected, id=id_)


CASES = [
    case("minimal", {}, OK),
    case("unknown-field", {"image": "bash"}, {"spec.image": FORB}),
    # template: first container "runtime" with a 1..2048-character image
    case("template-missing", {"template": None}, {"spec.template": REQ}),
    case("template-not-object", {"template": "pod"}, {"spec.template": TYPE}),
    case(
        "template-no-spec",
        {"template": {"spec": None, "metadata": {}}},
        {"spec.template.spec": REQ},
    ),
    case("containers-empty", pod(containers=[]), {f"{POD}.containers": REQ}),
    case("containers-not-list", pod(containers={"name": "runtime"}), {f"{POD}.containers": TYPE}),
    case(
        "container-name", pod(containers=[{"name": "main", "image": "bash"}]), {f"{C0}.name": INV}
    ),
    case(
        "container-name-second",
        pod(containers=[{"name": "sidecar", "image": "x"}, {"name": "runtime", "image": "bash"}]),
        {f"{C0}.name": INV},
    ),
    case(
        "extra-containers",
        pod(containers=[{"name": "runtime", "image": "bash"}, {"name": "sidecar", "image": "x"}]),
        OK,
    ),
    case("image-missing", pod(containers=[{"name": "runtime"}]), {f"{C0}.image": REQ}),
    case("image-empty", container(image=""), {f"{C0}.image": REQ}),
    case("image-1", container(image="b"), OK),
    case("image-2048", container(image="i" * 2048), OK),
    case("image-2049", container(image="i" * 2049), {f"{C0}.image": LONG}),
    case("restart-always", pod(restartPolicy="Always"), OK),
    case("restart-never", pod(restartPolicy="Never"), {f"{POD}.restartPolicy": NSUP}),
    case("service-account", pod(serviceAccountName="runtime-runner"), OK),
    case(
        "service-account-bad",
        pod(serviceAccountName="Runtime_Runner"),
        {f"{POD}.serviceAccountName": INV},
    ),
    case("service-account-empty", pod(serviceAccountName=""), {f"{POD}.serviceAccountName": INV}),
    case(
        "ephemeral-containers",
        pod(ephemeralContainers=[{"name": "debug"}]),
        {f"{POD}.ephemeralContainers": FORB},
    ),
    # port 1..65535, replicas >= 1, daemonImage <= 2048
    case("port-0", {"port": 0}, {"spec.port": INV}),
    case("port-1", {"port": 1}, OK),
    case("port-65535", {"port": 65535}, OK),
    case("port-65536", {"port": 65536}, {"spec.port": INV}),
    case("port-string", {"port": "9091"}, {"spec.port": TYPE}),
    case("replicas-0", {"replicas": 0}, {"spec.replicas": INV}),
    case("replicas-1", {"replicas": 1}, OK),
    case("replicas-int32-max", {"replicas": 2**31 - 1}, OK),
    case("replicas-int32-overflow", {"replicas": 2**31}, {"spec.replicas": INV}),
    case("daemon-image-2048", {"daemonImage": "d" * 2048}, OK),
    case("daemon-image-2049", {"daemonImage": "d" * 2049}, {"spec.daemonImage": LONG}),
    # capacity.resources: non-negative integers written as int or integer string
    case("capacity-int", {"capacity": {"resources": {"runs": 4, "gpu": 0}}}, OK),
    case("capacity-string", {"capacity": {"resources": {"runs": "4"}}}, OK),
    case(
        "capacity-negative",
        {"capacity": {"resources": {"runs": -1}}},
        {"spec.capacity.resources.runs": INV},
    ),
    case(
        "capacity-half",
        {"capacity": {"resources": {"runs": "0.5"}}},
        {"spec.capacity.resources.runs": INV},
    ),
    case(
        "capacity-milli",
        {"capacity": {"resources": {"runs": "500m"}}},
        {"spec.capacity.resources.runs": INV},
    ),
    case(
        "capacity-float",
        {"capacity": {"resources": {"runs": 1.5}}},
        {"spec.capacity.resources.runs": INV},
    ),
    case(
        "capacity-suffix",
        {"capacity": {"resources": {"runs": "1k"}}},
        {"spec.capacity.resources.runs": INV},
    ),
    case(
        "capacity-bool",
        {"capacity": {"resources": {"runs": True}}},
        {"spec.capacity.resources.runs": INV},
    ),
    case(
        "capacity-bad-name",
        {"capacity": {"resources": {"-runs": 1}}},
        {"spec.capacity.resources.-runs": INV},
    ),
    # artifactStore: driver + exactly the matching configuration
    case("store-filesystem", {"artifactStore": FS_STORE}, OK),
    case("store-s3", {"artifactStore": S3_STORE}, OK),
    case(
        "store-s3-full",
        s3(
            prefix="p" * 1024,
            region="eu-west-1",
            endpoint="https://s3.local",
            forcePathStyle=True,
            credentialsSecretName="s3-creds",
            uploadPartSize=5242880,
            uploadConcurrency=1,
        ),
        OK,
    ),
    case(
        "store-both",
        {"artifactStore": {**FS_STORE, "s3": S3_STORE["s3"]}},
        {"spec.artifactStore.s3": FORB},
    ),
    case("store-none", {"artifactStore": {"driver": "s3"}}, {"spec.artifactStore.s3": REQ}),
    case(
        "store-mismatch",
        {"artifactStore": {"driver": "s3", **{k: v for k, v in FS_STORE.items() if k != "driver"}}},
        {"spec.artifactStore.s3": REQ, "spec.artifactStore.filesystem": FORB},
    ),
    case("store-driver", {"artifactStore": {"driver": "gcs"}}, {"spec.artifactStore.driver": NSUP}),
    case(
        "store-driver-missing",
        {"artifactStore": {"s3": S3_STORE["s3"]}},
        {"spec.artifactStore.driver": REQ},
    ),
    case(
        "store-claim-missing",
        {"artifactStore": {"driver": "filesystem", "filesystem": {}}},
        {"spec.artifactStore.filesystem.volumeClaimName": REQ},
    ),
    case("bucket-slash", s3(bucket="ci/artifacts"), {"spec.artifactStore.s3.bucket": INV}),
    case("prefix-1025", s3(prefix="p" * 1025), {"spec.artifactStore.s3.prefix": LONG}),
    case(
        "part-size-5242879",
        s3(uploadPartSize=5242879),
        {"spec.artifactStore.s3.uploadPartSize": INV},
    ),
    case(
        "concurrency-0", s3(uploadConcurrency=0), {"spec.artifactStore.s3.uploadConcurrency": INV}
    ),
    case("region-129", s3(region="r" * 129), {"spec.artifactStore.s3.region": LONG}),
    case("endpoint-2049", s3(endpoint="e" * 2049), {"spec.artifactStore.s3.endpoint": LONG}),
    case(
        "credentials-secret-254",
        s3(credentialsSecretName="c" * 254),
        {"spec.artifactStore.s3.credentialsSecretName": LONG},
    ),
    case(
        "claim-name-254",
        {"artifactStore": {"driver": "filesystem", "filesystem": {"volumeClaimName": "c" * 254}}},
        {"spec.artifactStore.filesystem.volumeClaimName": LONG},
    ),
    case(
        "force-path-style-string",
        s3(forcePathStyle="true"),
        {"spec.artifactStore.s3.forcePathStyle": TYPE},
    ),
    # workspace: an inlined VolumeSource with at most one source
    case("workspace-empty", {"workspace": {}}, OK),
    case(
        "workspace-empty-dir",
        {"workspace": {"emptyDir": {"sizeLimit": "10Gi", "medium": "Memory"}}},
        OK,
    ),
    case("workspace-pvc", {"workspace": {"persistentVolumeClaim": {"claimName": "ws"}}}, OK),
    case("workspace-host-path", {"workspace": {"hostPath": {"path": "/srv/ws"}}}, OK),
    case("workspace-csi", {"workspace": {"csi": {"driver": "x.csi.k8s.io"}}}, OK),
    case(
        "workspace-two",
        {"workspace": {"emptyDir": {}, "persistentVolumeClaim": {"claimName": "ws"}}},
        {"spec.workspace": FORB},
    ),
    case("workspace-unknown", {"workspace": {"tmpfs": {}}}, {"spec.workspace.tmpfs": FORB}),
    case(
        "workspace-flat-size",
        {"workspace": {"sizeLimit": "1Gi"}},
        {"spec.workspace.sizeLimit": FORB},
    ),
    case(
        "empty-dir-size-negative",
        {"workspace": {"emptyDir": {"sizeLimit": "-1Gi"}}},
        {"spec.workspace.emptyDir.sizeLimit": INV},
    ),
    case(
        "empty-dir-size-garbage",
        {"workspace": {"emptyDir": {"sizeLimit": "big"}}},
        {"spec.workspace.emptyDir.sizeLimit": INV},
    ),
    case(
        "empty-dir-medium",
        {"workspace": {"emptyDir": {"medium": "Disk"}}},
        {"spec.workspace.emptyDir.medium": NSUP},
    ),
    case("source-not-object", {"workspace": {"nfs": "server:/x"}}, {"spec.workspace.nfs": TYPE}),
]


@pytest.mark.parametrize(("patch", "expected"), CASES)
def test_runtime_spec_admission(admin_api, patch, expected):
    manifest = runtime_manifest()
    manifest["spec"] = apply_merge(manifest["spec"], patch)
    response = admin_api.post(runtimes_url(), manifest, format="json")
    if expected is OK:
        assert response.status_code == 201, response.json()
    else:
        assert causes(response) == expected
        assert not Runtime.objects.exists()


def test_runtime_defaults_are_stored(admin_api):
    body = admin_api.post(runtimes_url(), runtime_manifest(), format="json").json()
    assert body["spec"]["port"] == 9091 and body["spec"]["replicas"] == 1
    assert "workspace" not in body["spec"]  # absent means emptyDir; nothing is invented
    assert "capacity" not in body["spec"]  # runs: 2 is the scheduler's default


def test_runtime_spec_stays_mutable(admin_api):
    admin_api.post(runtimes_url(), runtime_manifest(), format="json")
    response = merge_patch(
        admin_api,
        f"{runtimes_url()}/bash",
        {
            "spec": {
                "replicas": 3,
                "workspace": {"emptyDir": {"sizeLimit": "1Gi"}},
                "template": {"spec": {"containers": [{"name": "runtime", "image": "bash:5.3"}]}},
            }
        },
    )
    assert response.status_code == 200, response.json()
    assert Runtime.objects.get(name="bash").replicas == 3
    assert response.json()["metadata"]["generation"] == 2


STATUS_CASES = [
    case("ready", {"readyReplicas": 2, "observedGeneration": 1}, OK),
    case("ready-negative", {"readyReplicas": -1}, {"status.readyReplicas": INV}),
    case("ready-string", {"readyReplicas": "1"}, {"status.readyReplicas": TYPE}),
    case("unknown", {"phase": "Ready"}, {"status.phase": FORB}),
    case(
        "conditions-16",
        {
            "conditions": [
                {
                    "type": f"C{i}",
                    "status": "True",
                    "reason": "R",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                }
                for i in range(16)
            ]
        },
        OK,
    ),
    case(
        "conditions-17",
        {
            "conditions": [
                {
                    "type": f"C{i}",
                    "status": "True",
                    "reason": "R",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                }
                for i in range(17)
            ]
        },
        {"status.conditions": MANY},
    ),
    case(
        "conditions-duplicate",
        {
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "reason": "R",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                }
            ]
            * 2
        },
        {"status.conditions[1].type": DUP},
    ),
    case(
        "condition-incomplete",
        {"conditions": [{"type": "Available"}]},
        {
            "status.conditions[0].status": REQ,
            "status.conditions[0].reason": REQ,
            "status.conditions[0].lastTransitionTime": REQ,
        },
    ),
]


@pytest.mark.parametrize(("status", "expected"), STATUS_CASES)
def test_runtime_status_admission(admin_api, status, expected):
    admin_api.post(runtimes_url(), runtime_manifest(), format="json")
    response = merge_patch(admin_api, f"{runtimes_url()}/bash/status", {"status": status})
    if expected is OK:
        assert response.status_code == 200, response.json()
        assert Runtime.objects.get(name="bash").ready_replicas == status.get("readyReplicas", 0)
        assert response.json()["status"] == status
    else:
        assert causes(response) == expected
        assert Runtime.objects.get(name="bash").status == {}


def test_discovery_lists_both_kinds_with_short_names(admin_api):
    body = admin_api.get(f"/apis/{API_VERSION}").json()
    resources = {r["name"]: r for r in body["resources"]}
    assert (resources["runtimes"]["kind"], resources["runtimes"]["shortNames"]) == (
        "Runtime",
        ["rt"],
    )
    assert (resources["runs"]["kind"], resources["runs"]["shortNames"]) == ("Run", ["rn"])
    assert {"runtimes/status", "runs/status"} <= set(resources)


def _get(*args: str) -> list[list[str]]:
    out = io.StringIO()
    call_command("get", *args, stdout=out)
    return [line.split(None) for line in out.getvalue().splitlines()]


def test_printer_columns(admin_api):
    admin_api.post(runtimes_url(), runtime_manifest(replicas=2), format="json")
    admin_api.post(runs_url(), run_manifest("r1"), format="json")
    merge_patch(
        admin_api,
        f"{runs_url()}/r1/status",
        {
            "status": {
                "phase": "Failed",
                "assignedPod": "runtime-bash-0",
                "attempt": 2,
                "reason": "OutputsInvalid",
                "message": "bad",
            }
        },
    )
    runtimes = _get("rt", "-o", "wide")
    assert runtimes[0] == ["NAME", "REPLICAS", "READY", "AGE", "IMAGE"]
    assert runtimes[1][:3] + runtimes[1][4:] == ["bash", "2", "0", "bash:5.2"]
    runs = _get("rn", "-o", "wide")
    assert runs[0] == ["NAME", "PHASE", "RUNTIME", "POD", "REASON", "AGE", "ATTEMPT", "MESSAGE"]
    assert runs[1][:5] + runs[1][6:] == [
        "r1",
        "Failed",
        "bash",
        "runtime-bash-0",
        "OutputsInvalid",
        "2",
        "bad",
    ]
