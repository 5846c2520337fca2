"""JobClass, the parameter kinds and Job on the API (seed 003, API.md): every field rule answers
a 422 Status naming the field; immutability; defaults stored; scope and finalizers."""

from __future__ import annotations

import pytest

from tests.helpers.jobclasses import (
    GROUP,
    class_manifest,
    job_manifest,
    local_parameters_manifest,
    url,
)
from tests.helpers.runs import DUP, FORB, INV, LONG, NSUP, REQ, TYPE, causes, merge_patch

pytestmark = pytest.mark.django_db

CLASSES, JOBS = url("jobclasses"), url("jobs", "default")


def post(api, path, body):
    return api.post(path, body, format="json")


def assert_cause(response, field, reason):
    assert response.status_code == 422, response.json()
    body = response.json()
    assert body["kind"] == "Status" and body["reason"] == "Invalid"
    found = causes(response)
    assert field in found, found
    if reason:
        assert found[field] == reason, found


# --- JobClass -----------------------------------------------------------------------------


def test_a_job_class_is_cluster_scoped_and_protected(admin_api):
    response = post(admin_api, CLASSES, class_manifest("rootless"))
    assert response.status_code == 201, response.json()
    body = response.json()
    assert "namespace" not in body["metadata"]
    assert f"{GROUP}/job-class-protection" in body["metadata"]["finalizers"]
    assert admin_api.get(f"{CLASSES}/rootless").status_code == 200


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        ({"controllerName": None}, "spec.controllerName", REQ),
        ({"controllerName": "kubernetes"}, "spec.controllerName", INV),
        ({"controllerName": "Example.com/x"}, "spec.controllerName", INV),
        ({"controllerName": "example.com/" + "a" * 250}, "spec.controllerName", LONG),
        ({"parametersRef": None}, "spec.parametersRef", REQ),
        (
            {"parametersRef": {"kind": "LocalExecutionParameters", "name": "x"}},
            "spec.parametersRef.group",
            REQ,
        ),
        ({"parametersRef": {"group": GROUP, "name": "x"}}, "spec.parametersRef.kind", REQ),
        (
            {"parametersRef": {"group": GROUP, "kind": "LocalExecutionParameters"}},
            "spec.parametersRef.name",
            REQ,
        ),
        (
            {"parametersRef": {"group": "", "kind": "ConfigMap", "name": "x"}},
            "spec.parametersRef.group",
            REQ,
        ),
        (
            {"parametersRef": {"group": GROUP, "kind": "ConfigMap", "name": "x"}},
            "spec.parametersRef.kind",
            NSUP,
        ),
        (
            {"parametersRef": {"group": GROUP, "kind": "Secret", "name": "x"}},
            "spec.parametersRef.kind",
            NSUP,
        ),
        (
            {"parametersRef": {"group": GROUP, "kind": "1Bad", "name": "x"}},
            "spec.parametersRef.kind",
            INV,
        ),
        (
            {"parametersRef": {"group": GROUP, "kind": "K" * 64, "name": "x"}},
            "spec.parametersRef.kind",
            LONG,
        ),
        (
            {"parametersRef": {"group": "Not_A_Group", "kind": "K", "name": "x"}},
            "spec.parametersRef.group",
            INV,
        ),
        (
            {"parametersRef": {"group": GROUP, "kind": "K", "name": "Bad_Name"}},
            "spec.parametersRef.name",
            INV,
        ),
        (
            {"parametersRef": {"group": GROUP, "kind": "K", "name": "x", "namespace": "ns"}},
            "spec.parametersRef.namespace",
            FORB,
        ),
        (
            {"allowedNamespaces": {"matchLabels": {"bad key!": "x"}}},
            "spec.allowedNamespaces.matchLabels",
            INV,
        ),
        (
            {"allowedNamespaces": {"matchExpressions": [{"key": "a", "operator": "Near"}]}},
            "spec.allowedNamespaces.matchExpressions[0].operator",
            NSUP,
        ),
        (
            {"resources": {"defaults": {"requests": {"cpu": "lots"}}}},
            "spec.resources.defaults.requests.cpu",
            INV,
        ),
        (
            {"resources": {"defaults": {"requests": {"gpu": "1"}}}},
            "spec.resources.defaults.requests.gpu",
            NSUP,
        ),
        (
            {"resources": {"maximum": {"limits": {"memory": "0.5"}}}},
            "spec.resources.maximum.limits.memory",
            INV,
        ),
        (
            {"resources": {"minimum": {"requests": {"cpu": "0.0001"}}}},
            "spec.resources.minimum.requests.cpu",
            INV,
        ),
        ({"resources": {"defaults": {"claims": {}}}}, "spec.resources.defaults.claims", FORB),
        ({"resources": {"burst": {}}}, "spec.resources.burst", FORB),
    ],
)
def test_job_class_field_rules(admin_api, spec, field, reason):
    manifest = class_manifest("c")
    for key, value in spec.items():
        if value is None:
            manifest["spec"].pop(key)
        else:
            manifest["spec"][key] = value
    assert_cause(post(admin_api, CLASSES, manifest), field, reason)


def test_an_empty_allowed_namespaces_selector_is_stored(admin_api):
    response = post(admin_api, CLASSES, class_manifest("c", allowedNamespaces={}))
    assert response.status_code == 201, response.json()
    assert response.json()["spec"]["allowedNamespaces"] == {}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"controllerName": "example.com/other"}, "spec.controllerName"),
        (
            {
                "parametersRef": {
                    "group": GROUP,
                    "kind": "LocalExecutionParameters",
                    "name": "other",
                }
            },
            "spec.parametersRef",
        ),
    ],
)
def test_controller_name_and_parameters_ref_are_immutable(admin_api, change, field):
    assert post(admin_api, CLASSES, class_manifest("c")).status_code == 201
    response = merge_patch(admin_api, f"{CLASSES}/c", {"spec": change})
    assert_cause(response, field, INV)


def test_allowed_namespaces_and_resources_stay_mutable(admin_api):
    assert post(admin_api, CLASSES, class_manifest("c")).status_code == 201
    response = merge_patch(
        admin_api,
        f"{CLASSES}/c",
        {
            "spec": {
                "allowedNamespaces": {"matchLabels": {"team": "a"}},
                "resources": {"defaults": {"requests": {"cpu": "250m"}}},
            }
        },
    )
    assert response.status_code == 200, response.json()
    assert response.json()["metadata"]["generation"] == 2


# --- parameter kinds ----------------------------------------------------------------------


def test_local_parameters_defaults_and_rules(admin_api):
    path = url("localexecutionparameters")
    response = post(admin_api, path, local_parameters_manifest("local"))
    assert response.status_code == 201, response.json()
    assert response.json()["spec"] == {"maxConcurrentJobs": 4}
    assert f"{GROUP}/parameters-protection" in response.json()["metadata"]["finalizers"]
    for spec, field in (
        ({"workRoot": "relative/dir"}, "spec.workRoot"),
        ({"workRoot": "/a/../b"}, "spec.workRoot"),
        ({"maxConcurrentJobs": 0}, "spec.maxConcurrentJobs"),
        ({"maxConcurrentJobs": "2"}, "spec.maxConcurrentJobs"),
    ):
        assert_cause(post(admin_api, path, local_parameters_manifest("x", **spec)), field, None)


def kubernetes_parameters(**spec) -> dict:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "KubernetesExecutionParameters",
        "metadata": {"name": "rootless"},
        "spec": spec,
    }


def test_kubernetes_parameters_take_the_seed_example(admin_api):
    spec = {
        "serviceAccountName": "ayatori-job",
        "runtimeClassName": "runc",
        "scheduling": {
            "nodeSelector": {"ayatori.ddupan.top/node-role": "execution"},
            "tolerations": [
                {
                    "key": "ayatori.ddupan.top/execution",
                    "operator": "Equal",
                    "value": "true",
                    "effect": "NoSchedule",
                }
            ],
        },
        "podSecurityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "imagePullPolicy": "IfNotPresent",
    }
    response = post(admin_api, url("kubernetesexecutionparameters"), kubernetes_parameters(**spec))
    assert response.status_code == 201, response.json()
    assert response.json()["spec"] == spec


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        ({"serviceAccountName": "Bad_SA"}, "spec.serviceAccountName", INV),
        ({"runtimeClassName": "Bad_RC"}, "spec.runtimeClassName", INV),
        ({"imagePullPolicy": "Sometimes"}, "spec.imagePullPolicy", NSUP),
        (
            {"scheduling": {"tolerations": [{"key": "k", "operator": "Maybe"}]}},
            "spec.scheduling.tolerations[0].operator",
            NSUP,
        ),
        (
            {"scheduling": {"tolerations": [{"operator": "Exists", "value": "v"}]}},
            "spec.scheduling.tolerations[0].value",
            INV,
        ),
        (
            {"scheduling": {"tolerations": [{"effect": "NoSchedule"}]}},
            "spec.scheduling.tolerations[0].operator",
            INV,
        ),
        (
            {"podSecurityContext": {"runAsNonRoot": True, "runAsUser": 0}},
            "spec.podSecurityContext.runAsUser",
            INV,
        ),
        ({"podSecurityContext": {"privileged": True}}, "spec.podSecurityContext.privileged", FORB),
        (
            {"podSecurityContext": {"seccompProfile": {"type": "Localhost"}}},
            "spec.podSecurityContext.seccompProfile.localhostProfile",
            REQ,
        ),
        ({"podSecurityContext": {"runAsUser": -1}}, "spec.podSecurityContext.runAsUser", INV),
        ({"podTemplate": {}}, "spec.podTemplate", FORB),
    ],
)
def test_kubernetes_parameters_rules(admin_api, spec, field, reason):
    response = post(admin_api, url("kubernetesexecutionparameters"), kubernetes_parameters(**spec))
    assert_cause(response, field, reason)


def sandbox_parameters(**spec) -> dict:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "OpenSandboxExecutionParameters",
        "metadata": {"name": "microvm"},
        "spec": {
            "endpoint": "https://opensandbox-api.example.internal",
            "apiKeySecretRef": {
                "namespace": "ayatori-system",
                "name": "opensandbox-api",
                "key": "api-key",
            },
            **spec,
        },
    }


def test_opensandbox_parameters_defaults(admin_api):
    response = post(
        admin_api, url("opensandboxexecutionparameters"), sandbox_parameters(poolRef="microvm")
    )
    assert response.status_code == 201, response.json()
    spec = response.json()["spec"]
    assert spec["apiKeySecretRef"] == {
        "namespace": "ayatori-system",
        "name": "opensandbox-api",
        "key": "api-key",
    }
    assert spec["requestMapping"] == "AdmissionOnly"
    assert (spec["allowSecretEnv"], spec["allowImageAuth"], spec["allowInsecureHTTP"]) == (
        False,
        False,
        False,
    )


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        ({"endpoint": "http://opensandbox.local"}, "spec.endpoint", INV),
        ({"endpoint": "https://user:hunter2@opensandbox.local"}, "spec.endpoint", INV),
        ({"endpoint": "https://token@opensandbox.local"}, "spec.endpoint", INV),
        ({"endpoint": "ftp://opensandbox.local"}, "spec.endpoint", INV),
        ({"endpoint": "opensandbox.local"}, "spec.endpoint", INV),
        ({"endpoint": "https://opensandbox.local/?key=abc"}, "spec.endpoint", INV),
        ({"endpoint": "https://opensandbox.local:notaport"}, "spec.endpoint", INV),
        ({"apiKeySecretRef": None}, "spec.apiKeySecretRef", REQ),
        ({"apiKeySecretRef": {"name": "s", "key": "k"}}, "spec.apiKeySecretRef.namespace", REQ),
        (
            {"apiKeySecretRef": {"namespace": "ns", "name": "s", "key": "bad key"}},
            "spec.apiKeySecretRef.key",
            INV,
        ),
        ({"apiKey": "plain"}, "spec.apiKey", FORB),
        ({"requestMapping": "Best"}, "spec.requestMapping", NSUP),
        ({"allowSecretEnv": "yes"}, "spec.allowSecretEnv", TYPE),
        ({"extensions": {"a": "b"}}, "spec.extensions", FORB),
    ],
)
def test_opensandbox_parameters_rules(admin_api, spec, field, reason):
    manifest = sandbox_parameters()
    for key, value in spec.items():
        if value is None:
            manifest["spec"].pop(key)
        else:
            manifest["spec"][key] = value
    response = post(admin_api, url("opensandboxexecutionparameters"), manifest)
    assert_cause(response, field, reason)


def test_an_endpoint_error_never_repeats_its_credentials(admin_api):
    manifest = sandbox_parameters(endpoint="https://user:hunter2@opensandbox.local")
    response = post(admin_api, url("opensandboxexecutionparameters"), manifest)
    assert response.status_code == 422
    assert "hunter2" not in response.content.decode()


def test_plain_http_needs_allow_insecure_http(admin_api):
    manifest = sandbox_parameters(endpoint="http://127.0.0.1:8080", allowInsecureHTTP=True)
    response = post(admin_api, url("opensandboxexecutionparameters"), manifest)
    assert response.status_code == 201, response.json()


def test_parameters_stay_mutable_for_rotation_and_failover(admin_api):
    path = url("opensandboxexecutionparameters")
    assert post(admin_api, path, sandbox_parameters()).status_code == 201
    response = merge_patch(
        admin_api,
        f"{path}/microvm",
        {
            "spec": {
                "endpoint": "https://standby.example.internal",
                "apiKeySecretRef": {"name": "rotated"},
            }
        },
    )
    assert response.status_code == 200, response.json()


# --- Job ----------------------------------------------------------------------------------


def test_a_job_is_namespaced_and_holds_its_execution_cleanup(admin_api):
    response = post(admin_api, JOBS, job_manifest("j"))
    assert response.status_code == 201, response.json()
    assert response.json()["metadata"]["namespace"] == "default"
    assert f"{GROUP}/execution-cleanup" in response.json()["metadata"]["finalizers"]


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        ({"steps": []}, "spec.steps", REQ),
        ({"steps": [{"name": "a"}]}, "spec.steps[0].run", REQ),
        ({"steps": [{"name": "Bad_Step", "run": "x"}]}, "spec.steps[0].name", INV),
        (
            {"steps": [{"name": "a", "run": "x"}, {"name": "a", "run": "y"}]},
            "spec.steps[1].name",
            DUP,
        ),
        ({"steps": [{"name": "a", "run": "x", "uses": "y"}]}, "spec.steps[0].uses", FORB),
        ({"steps": [{"name": "a", "run": "x"}], "command": ["true"]}, "spec.steps", INV),
        ({"steps": None, "args": ["x"]}, "spec.steps", INV),
        ({"steps": None, "command": []}, "spec.command", REQ),
        ({"jobClassName": "Bad_Class"}, "spec.jobClassName", INV),
        ({"image": ""}, "spec.image", None),
        ({"workingDir": "/abs"}, "spec.workingDir", INV),
        ({"workingDir": "a/../b"}, "spec.workingDir", INV),
        ({"timeoutSeconds": 0}, "spec.timeoutSeconds", INV),
        ({"timeoutSeconds": "60"}, "spec.timeoutSeconds", TYPE),
        ({"cancelRequested": "true"}, "spec.cancelRequested", TYPE),
        ({"resources": {"requests": {"cpu": "one"}}}, "spec.resources.requests.cpu", INV),
        ({"resources": {"requests": {"cpu": "1.0005"}}}, "spec.resources.requests.cpu", INV),
        ({"resources": {"limits": {"memory": "1.5"}}}, "spec.resources.limits.memory", INV),
        (
            {"resources": {"limits": {"nvidia.com/gpu": "1"}}},
            "spec.resources.limits.nvidia.com/gpu",
            NSUP,
        ),
        ({"resources": {"requests": {"cpu": True}}}, "spec.resources.requests.cpu", INV),
        ({"env": [{"name": "1X", "value": "v"}]}, "spec.env[0].name", INV),
        (
            {"env": [{"name": "A", "value": "v"}, {"name": "A", "value": "w"}]},
            "spec.env[1].name",
            DUP,
        ),
        (
            {
                "env": [
                    {
                        "name": "A",
                        "value": "v",
                        "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}},
                    }
                ]
            },
            "spec.env[0].valueFrom",
            INV,
        ),
        ({"env": [{"name": "A", "valueFrom": {}}]}, "spec.env[0].valueFrom", INV),
        (
            {
                "env": [
                    {
                        "name": "A",
                        "valueFrom": {
                            "secretKeyRef": {"name": "s", "key": "k"},
                            "configMapKeyRef": {"name": "c", "key": "k"},
                        },
                    }
                ]
            },
            "spec.env[0].valueFrom",
            INV,
        ),
        (
            {"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s"}}}]},
            "spec.env[0].valueFrom.secretKeyRef.key",
            REQ,
        ),
        (
            {
                "env": [
                    {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "bad key"}}}
                ]
            },
            "spec.env[0].valueFrom.configMapKeyRef.key",
            INV,
        ),
        (
            {"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]},
            "spec.env[0].valueFrom.fieldRef",
            FORB,
        ),
        ({"imagePullSecrets": [{"name": "Bad_Name"}]}, "spec.imagePullSecrets[0].name", INV),
        ({"source": {}}, "spec.source", INV),
        (
            {"source": {"inline": {"a": "x"}, "repoURL": "https://git.example/r"}},
            "spec.source",
            INV,
        ),
        ({"source": {"repoURL": "https://git.example/r"}}, "spec.source.commitSHA", REQ),
        (
            {"source": {"repoURL": "https://git.example/r", "commitSHA": "main"}},
            "spec.source.commitSHA",
            INV,
        ),
        ({"source": {"inline": {"../escape": "x"}}}, "spec.source.inline", INV),
        ({"source": {"inline": {"/etc/passwd": "x"}}}, "spec.source.inline", INV),
        ({"podSpec": {}}, "spec.podSpec", FORB),
    ],
)
def test_job_field_rules(admin_api, spec, field, reason):
    manifest = job_manifest("j")
    for key, value in spec.items():
        if value is None:
            manifest["spec"].pop(key, None)
        else:
            manifest["spec"][key] = value
    assert_cause(post(admin_api, JOBS, manifest), field, reason)


def test_a_single_command_job_and_a_repository_source_are_admitted(admin_api):
    manifest = job_manifest(
        "j",
        command=["sh", "-c"],
        args=["echo hi"],
        source={"repoURL": "https://git.example/r", "commitSHA": "a" * 40},
        resources={"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": 1}},
        timeoutSeconds=60,
        image="busybox:1.36",
    )
    response = post(admin_api, JOBS, manifest)
    assert response.status_code == 201, response.json()


def test_a_job_spec_is_immutable_but_cancel_requested(admin_api):
    assert post(admin_api, JOBS, job_manifest("j")).status_code == 201
    response = merge_patch(admin_api, f"{JOBS}/j", {"spec": {"timeoutSeconds": 5}})
    assert_cause(response, "spec.timeoutSeconds", INV)
    response = merge_patch(admin_api, f"{JOBS}/j", {"spec": {"cancelRequested": True}})
    assert response.status_code == 200, response.json()
    response = merge_patch(admin_api, f"{JOBS}/j", {"spec": {"cancelRequested": False}})
    assert_cause(response, "spec.cancelRequested", INV)


def test_status_is_written_only_through_the_status_subresource(admin_api):
    assert post(admin_api, JOBS, job_manifest("j")).status_code == 201
    response = merge_patch(admin_api, f"{JOBS}/j", {"status": {"phase": "Succeeded"}})
    assert response.status_code == 200
    assert response.json().get("status", {}).get("phase") != "Succeeded"


def test_short_names_and_discovery(admin_api):
    body = admin_api.get(f"/apis/{GROUP}/v1alpha1").json()
    by_name = {r["name"]: r for r in body["resources"]}
    assert by_name["jobclasses"]["namespaced"] is False
    assert by_name["jobclasses"]["shortNames"] == ["jc"]
    assert by_name["jobs"]["namespaced"] is True
    for plural in (
        "kubernetesexecutionparameters",
        "opensandboxexecutionparameters",
        "localexecutionparameters",
    ):
        assert by_name[plural]["namespaced"] is False
