"""The Helm chart deploy/helm/kruntimes-portal, rendered with the Helm v4 SDK (helm-python-sdk)
and read back: every object, the webhook and its certificate, least-privilege RBAC, secrets by
reference only, and the same process commands ``manage.py up`` runs."""

from __future__ import annotations

import base64
from pathlib import Path

import helm_python as helm
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from django.urls import resolve

from portal.management.commands.up import control_plane, web_command
from portal.tls import ServingFiles

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "kruntimes-portal"
RELEASE = "kr"
NAMESPACE = "kruntimes-system"
SECRET_ENV = {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY"}
CONTROLLER_RULES = [
    {
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["subjectaccessreviews"],
        "verbs": ["create"],
    },
    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
    {
        "apiGroups": ["apps"],
        "resources": ["deployments"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
    {
        "apiGroups": ["batch"],
        "resources": ["jobs"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create", "get"]},
    {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["get"]},
    {"apiGroups": ["node.k8s.io"], "resources": ["runtimeclasses"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "delete"]},
    {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
]


def render(values: dict | None = None) -> list[dict]:
    with helm.Chart.load(CHART) as chart:
        manifests = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    objects = []
    for text in manifests.values():
        objects += [doc for doc in yaml.safe_load_all(text) if doc is not None]
    return objects


@pytest.fixture(scope="module")
def objects() -> list[dict]:
    return render()


def one(objects: list[dict], kind: str, suffix: str = "") -> dict:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"].endswith(suffix)]
    assert len(found) == 1, [o["metadata"]["name"] for o in found]
    return found[0]


def pod_specs(objects: list[dict]) -> dict[str, dict]:
    return {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]
        for o in objects
        if o["kind"] in ("Deployment", "Job")
    }


def containers(objects: list[dict]) -> list[dict]:
    return [c for spec in pod_specs(objects).values() for c in spec["containers"]]


def container(objects: list[dict], deployment_suffix: str, name: str) -> dict:
    spec = one(objects, "Deployment", deployment_suffix)["spec"]["template"]["spec"]
    return next(c for c in spec["containers"] if c["name"] == name)


def test_every_object_parses_and_is_named(objects):
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == [
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "Deployment",
        "Deployment",
        "Job",
        "Role",
        "RoleBinding",
        "Secret",
        "Service",
        "Service",
        "ServiceAccount",
        "ValidatingWebhookConfiguration",
    ]
    for obj in objects:
        assert obj["apiVersion"] and obj["kind"] and obj["metadata"]["name"], obj


def test_the_chart_lints_clean():
    report = helm.lint(CHART, namespace=NAMESPACE, strict=True)

    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []  # warnings and errors


def test_the_crds_directory_holds_every_portal_kind():
    with helm.Chart.load(CHART) as chart:
        crds = [doc for crd in chart.crds for doc in yaml.safe_load_all(crd["data"]) if doc]

    names = {crd["metadata"]["name"] for crd in crds}
    assert {"runs.kruntimes.io", "persistentworkspaces.kruntimes.io"} <= names
    assert {crd["kind"] for crd in crds} == {"CustomResourceDefinition"}


def test_the_webhook_points_at_the_charts_service(objects):
    config = one(objects, "ValidatingWebhookConfiguration")
    (webhook,) = config["webhooks"]
    service = one(objects, "Service", "-webhook")
    web = one(objects, "Deployment", "-web")["spec"]["template"]

    target = webhook["clientConfig"]["service"]
    assert target["name"] == service["metadata"]["name"]
    assert target["namespace"] == NAMESPACE
    assert target["port"] == service["spec"]["ports"][0]["port"] == 443
    assert resolve(target["path"]).url_name == "workspaces-validate-run"
    # the Service reaches the web pods on their HTTPS port
    assert service["spec"]["selector"].items() <= web["metadata"]["labels"].items()
    ports = {p["name"] for c in web["spec"]["containers"] for p in c.get("ports", [])}
    assert service["spec"]["ports"][0]["targetPort"] in ports
    assert webhook["failurePolicy"] == "Fail"
    assert webhook["timeoutSeconds"] == 5
    assert webhook["sideEffects"] == "None"
    assert webhook["rules"] == [
        {
            "apiGroups": ["kruntimes.io"],
            "apiVersions": ["v1alpha1"],
            "resources": ["runs"],
            "operations": ["CREATE"],
            "scope": "Namespaced",
        }
    ]


def verify_signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> None:
    key = issuer.public_key()
    if isinstance(key, rsa.RSAPublicKey):
        key.verify(
            cert.signature,
            cert.tbs_certificate_bytes,
            padding.PKCS1v15(),
            cert.signature_hash_algorithm,
        )
    else:
        assert isinstance(key, ec.EllipticCurvePublicKey)
        key.verify(
            cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm)
        )


def test_the_ca_bundle_signed_the_serving_certificate(objects):
    (webhook,) = one(objects, "ValidatingWebhookConfiguration")["webhooks"]
    secret = one(objects, "Secret", "-webhook-tls")
    web = one(objects, "Deployment", "-web")["spec"]["template"]["spec"]
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}

    ca = x509.load_pem_x509_certificate(base64.b64decode(webhook["clientConfig"]["caBundle"]))
    serving = x509.load_pem_x509_certificate(data["tls.crt"])
    key = serialization.load_pem_private_key(data["tls.key"], password=None)

    assert secret["type"] == "kubernetes.io/tls"
    assert x509.load_pem_x509_certificate(data["ca.crt"]) == ca
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert serving.issuer == ca.subject
    verify_signed_by(serving, ca)  # raises InvalidSignature otherwise
    assert key.public_key().public_numbers() == serving.public_key().public_numbers()
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert f"kr-kruntimes-portal-webhook.{NAMESPACE}.svc" in names.get_values_for_type(x509.DNSName)
    # the web pods serve exactly this Secret
    (tls,) = [v for v in web["volumes"] if "secret" in v]
    assert tls["secret"]["secretName"] == secret["metadata"]["name"]


def test_rbac_is_the_least_privilege_rule_set(objects):
    role = one(objects, "ClusterRole")
    binding = one(objects, "ClusterRoleBinding")
    account = one(objects, "ServiceAccount")

    assert role["rules"] == CONTROLLER_RULES
    for rule in role["rules"]:
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field], rule
        assert not any("persistentworkspaces" in r for r in rule["resources"])
        assert "kruntimes.io" not in rule["apiGroups"]
    # in its own namespace only: the cluster-provider replicas' leader-election Lease
    (lease_role,) = [o for o in objects if o["kind"] == "Role"]
    (lease_binding,) = [o for o in objects if o["kind"] == "RoleBinding"]
    assert lease_role["metadata"]["namespace"] == NAMESPACE
    assert lease_role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "create", "update"],
        }
    ]
    assert lease_binding["roleRef"]["name"] == lease_role["metadata"]["name"]
    assert lease_binding["subjects"] == binding["subjects"]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": NAMESPACE}
    ]
    for name, spec in pod_specs(objects).items():
        if name.endswith("-migrate"):  # a hook: before the ServiceAccount exists, no token
            assert spec["automountServiceAccountToken"] is False
            assert "serviceAccountName" not in spec
        else:
            assert spec["serviceAccountName"] == account["metadata"]["name"]


SECRETS = {
    "secrets": {
        "database": {"name": "pg-credentials", "key": "url"},
        "redis": {"name": "redis-credentials", "key": "broker"},
        "secretKey": {"name": "django", "key": "signing"},
        "encryptionKeys": {"name": "encryption", "key": "keys"},
    }
}


def test_every_container_reads_the_secrets_by_reference():
    objects = render(SECRETS)
    expected = {
        "DATABASE_URL": {"name": "pg-credentials", "key": "url"},
        "CELERY_BROKER_URL": {"name": "redis-credentials", "key": "broker"},
        "SECRET_KEY": {"name": "django", "key": "signing"},
        "KRUNTIMES_SECRET_ENCRYPTION_KEYS": {"name": "encryption", "key": "keys"},
    }
    for found in containers(objects):
        env = {e["name"]: e for e in found["env"]}
        for name, ref in expected.items():
            assert "value" not in env[name], (found["name"], name)
            assert env[name]["valueFrom"] == {"secretKeyRef": ref}, (found["name"], name)
        assert env["KRUNTIMES_CLUSTER"]["value"] == "kubernetes"


def test_no_secret_value_is_rendered():
    objects = render(SECRETS)
    text = yaml.safe_dump_all(o for o in objects if o["kind"] != "Secret")

    for scheme in ("postgres://", "postgresql://", "redis://", "rediss://"):
        assert scheme not in text
    # the only Secret the chart makes is its own webhook certificate
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Secret"] == [
        "kr-kruntimes-portal-webhook-tls"
    ]
    for found in containers(objects):
        for entry in found["env"]:
            if any(word in entry["name"] for word in ("URL", "SECRET", "KEY", "PASSWORD")):
                assert "valueFrom" in entry, entry
    without_optional = render()
    for found in containers(without_optional):
        assert "KRUNTIMES_SECRET_ENCRYPTION_KEYS" not in {e["name"] for e in found["env"]}


def test_web_runs_the_command_manage_py_up_runs(objects, settings):
    settings.DATA_DIR = Path("/var/lib/kruntimes")  # the image's KRUNTIMES_DATA_DIR
    web = container(objects, "-web", "web")
    tls = ServingFiles(
        cert=Path("/etc/kruntimes/tls/tls.crt"), key=Path("/etc/kruntimes/tls/tls.key")
    )

    assert web["command"] == ["python", *web_command(8443, "0.0.0.0", workers=4, tls=tls)[1:]]
    mounts = {m["mountPath"]: m["name"] for m in web["volumeMounts"]}
    assert mounts["/etc/kruntimes/tls"] == "tls"


def test_the_control_worker_and_beat_run_what_manage_py_up_runs(objects, settings):
    settings.DATA_DIR = Path("/var/lib/kruntimes")  # the image's KRUNTIMES_DATA_DIR
    up = {child.name: child.argv for child in control_plane(8443, "0.0.0.0")}

    assert container(objects, "-control-worker", "control-worker")["command"] == [
        "python",
        *up["control-worker"][1:],
    ]
    assert container(objects, "-beat", "beat")["command"] == ["python", *up["beat"][1:]]
    assert "django_celery_beat.schedulers:DatabaseScheduler" in up["beat"]
    beat = one(objects, "Deployment", "-beat")["spec"]
    assert beat["replicas"] == 1 and beat["strategy"] == {"type": "Recreate"}


def test_the_control_worker_pod_runs_the_cluster_provider(objects):
    spec = one(objects, "Deployment", "-control-worker")["spec"]["template"]["spec"]

    assert [c["name"] for c in spec["containers"]] == ["control-worker", "cluster-provider"]
    assert spec["containers"][1]["command"] == ["python", "manage.py", "cluster-provider"]


def test_migrations_run_as_a_pre_install_and_pre_upgrade_hook(objects):
    job = one(objects, "Job", "-migrate")

    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    (migrate,) = job["spec"]["template"]["spec"]["containers"]
    assert migrate["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_image_replicas_and_resources_come_from_values():
    # values merge into the defaults key by key: give every key the defaults have
    resources = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}
    objects = render(
        {
            "image": {"repository": "registry.example/kruntimes", "tag": "1.2.3"},
            "web": {"replicas": 5, "workers": 2, "resources": resources},
            "controlWorker": {"replicas": 2, "provider": {"resources": resources}},
        }
    )

    web = one(objects, "Deployment", "-web")
    assert web["spec"]["replicas"] == 5
    assert container(objects, "-web", "web")["resources"] == resources
    command = container(objects, "-web", "web")["command"]
    assert command[command.index("--workers") + 1] == "2"
    assert one(objects, "Deployment", "-control-worker")["spec"]["replicas"] == 2
    assert container(objects, "-control-worker", "cluster-provider")["resources"] == resources
    assert {c["image"] for c in containers(objects)} == {"registry.example/kruntimes:1.2.3"}


def test_metrics_readers_get_exactly_the_metrics_url(objects):
    assert not [o for o in objects if o["metadata"]["name"].endswith("-metrics-reader")]
    prometheus = {"name": "prometheus-k8s", "namespace": "monitoring"}
    rendered = render({"metrics": {"readers": [prometheus], "anonymous": False}})
    role = one(rendered, "ClusterRole", "-metrics-reader")
    binding = one(rendered, "ClusterRoleBinding", "-metrics-reader")
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", **prometheus}]
    for found in containers(rendered):
        assert "KRUNTIMES_METRICS_ANONYMOUS" not in {e["name"] for e in found["env"]}


def test_metrics_can_be_opened_to_a_scraper_without_a_token():
    rendered = render({"metrics": {"readers": [], "anonymous": True}})
    for found in containers(rendered):
        env = {e["name"]: e.get("value") for e in found["env"]}
        assert env["KRUNTIMES_METRICS_ANONYMOUS"] == "true"
