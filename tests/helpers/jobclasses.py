"""JobClasses, parameters and Jobs created through the store as an operator would, and the
controllers run as the Celery tasks run them (directly, one pass at a time)."""

from __future__ import annotations

from django.utils import timezone

from jobclasses import class_controller, job_controller
from jobclasses.models import GROUP, Job, JobClass
from portal.machinery import store
from portal.machinery.registry import registry
from portal.models import Namespace
from tests.helpers.operator import OPERATOR

API_VERSION = f"{GROUP}/v1alpha1"
LOCAL = "execution.ayatori.ddupan.top/local"
DEFAULT_ANNOTATION = f"{GROUP}/is-default-job-class"
NAMESPACE_DEFAULT = f"{GROUP}/default-job-class"


def kind(plural: str):
    return registry.get(GROUP, "v1alpha1", plural)


def url(plural: str, namespace: str | None = None) -> str:
    if namespace:
        return f"/apis/{GROUP}/v1alpha1/namespaces/{namespace}/{plural}"
    return f"/apis/{GROUP}/v1alpha1/{plural}"


def class_manifest(
    name: str = "default",
    *,
    default: bool = False,
    controller: str = LOCAL,
    parameters: str = "local",
    parameters_kind: str = "LocalExecutionParameters",
    **spec,
) -> dict:
    metadata: dict = {"name": name}
    if default:
        metadata["annotations"] = {DEFAULT_ANNOTATION: "true"}
    return {
        "apiVersion": API_VERSION,
        "kind": "JobClass",
        "metadata": metadata,
        "spec": {
            "controllerName": controller,
            "parametersRef": {"group": GROUP, "kind": parameters_kind, "name": parameters},
            **spec,
        },
    }


def local_parameters_manifest(name: str = "local", **spec) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "LocalExecutionParameters",
        "metadata": {"name": name},
        "spec": spec,
    }


def job_manifest(name: str = "job", *, steps=None, **spec) -> dict:
    if "command" not in spec:
        spec["steps"] = steps or [{"name": "hello", "run": "echo hello"}]
    return {"apiVersion": API_VERSION, "kind": "Job", "metadata": {"name": name}, "spec": spec}


def create(manifest: dict, namespace: str | None = None):
    plural = {
        "JobClass": "jobclasses",
        "Job": "jobs",
        "LocalExecutionParameters": "localexecutionparameters",
        "KubernetesExecutionParameters": "kubernetesexecutionparameters",
        "OpenSandboxExecutionParameters": "opensandboxexecutionparameters",
    }[manifest["kind"]]
    return store.create(kind(plural), manifest, namespace=namespace, context=OPERATOR)


def patch(obj, body: dict):
    plural = registry.for_model(type(obj)).plural
    return store.patch(
        kind(plural), getattr(obj, "namespace", None), obj.name, body, context=OPERATOR
    )


def delete(obj):
    plural = registry.for_model(type(obj)).plural
    return store.delete(kind(plural), getattr(obj, "namespace", None), obj.name, context=OPERATOR)


def local_class(name: str = "default", *, parameters: str = "local", params_spec=None, **kw):
    """LocalExecutionParameters (unless they exist) and a JobClass on them, reconciled."""
    from jobclasses.models import LocalExecutionParameters

    if not LocalExecutionParameters.objects.filter(name=parameters).exists():
        create(local_parameters_manifest(parameters, **(params_spec or {})))
    create(class_manifest(name, parameters=parameters, **kw))
    return reconcile_class(name)


def reconcile_class(name: str) -> JobClass:
    job_class = JobClass.objects.get(name=name)
    class_controller.reconcile_class(job_class, timezone.now())
    return JobClass.objects.get(pk=job_class.pk)


def reconcile_classes() -> None:
    class_controller.reconcile_all(timezone.now())


def reconcile_job(job) -> Job:
    fresh = Job.objects.get(pk=job.pk)
    job_controller.reconcile(fresh, timezone.now())
    return Job.objects.filter(pk=job.pk).first()


def set_namespace(name: str, *, labels=None, annotations=None) -> Namespace:
    namespace, _ = Namespace.objects.get_or_create(name=name)
    if labels is not None:
        namespace.labels = labels
    if annotations is not None:
        namespace.annotations = annotations
    namespace.save()
    return namespace


def condition(obj, ctype: str) -> dict:
    for cond in (obj.status or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return {}


def reason(obj, ctype: str) -> tuple[str, str]:
    cond = condition(obj, ctype)
    return cond.get("status", ""), cond.get("reason", "")


KUBERNETES = "execution.ayatori.ddupan.top/kubernetes"


def kubernetes_parameters_manifest(name: str = "rootless", **spec) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "KubernetesExecutionParameters",
        "metadata": {"name": name},
        "spec": spec,
    }


def kubernetes_class(
    name: str = "rootless", *, parameters: str = "rootless", params_spec=None, **kw
):
    """KubernetesExecutionParameters (unless they exist) and a JobClass on them, reconciled."""
    from jobclasses.models import KubernetesExecutionParameters

    if not KubernetesExecutionParameters.objects.filter(name=parameters).exists():
        create(kubernetes_parameters_manifest(parameters, **(params_spec or {})))
    create(
        class_manifest(
            name,
            controller=KUBERNETES,
            parameters=parameters,
            parameters_kind="KubernetesExecutionParameters",
            **kw,
        )
    )
    return reconcile_class(name)
