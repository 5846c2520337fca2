"""``authorization.k8s.io/v1`` SelfSubjectAccessReview and SelfSubjectRulesReview: what
``kubectl auth can-i`` and ``can-i --list`` ask, answered through the one authorizer
interface (``review``, ``review_non_resource``, ``rules_review``) for the user who asks.
Created and answered, never stored."""

from __future__ import annotations

from typing import Any

from portal.machinery import errors
from portal.machinery.errors import FieldError

from .authorizer import Decision, review, review_non_resource, rules_review

GROUP = "authorization.k8s.io"
VERSION = "v1"
RESOURCE_KEYS = ("namespace", "verb", "group", "version", "resource", "subresource", "name")
NON_RESOURCE_KEYS = ("path", "verb")


def _strings(value: Any, keys: tuple[str, ...], path: str) -> tuple[dict[str, str], list]:
    if not isinstance(value, dict):
        return {}, [FieldError(path, errors.TYPE_INVALID, "must be an object")]
    causes: list[FieldError] = [
        errors.forbidden(f"{path}.{key}", f'unknown field "{key}"')
        for key in sorted(set(value) - set(keys) - {"fieldSelector", "labelSelector"})
    ]
    found: dict[str, str] = {}
    for key in keys:
        item = value.get(key)
        if item is not None and not isinstance(item, str):
            causes.append(FieldError(f"{path}.{key}", errors.TYPE_INVALID, "must be a string"))
        found[key] = item if isinstance(item, str) else ""
    return found, causes


def _spec(kind: str, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise errors.bad_request(f"the body must be a {kind} object")
    spec = body.get("spec")
    if not isinstance(spec, dict):
        raise errors.invalid_object(kind, GROUP, "", [errors.required("spec")])
    return spec


def _answer(kind: str, body: dict[str, Any], spec: dict[str, Any], status: dict) -> dict:
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    return {
        "kind": kind,
        "apiVersion": f"{GROUP}/{VERSION}",
        "metadata": {**metadata, "creationTimestamp": None},
        "spec": spec,
        "status": status,
    }


def _status(decision: Decision) -> dict[str, Any]:
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.denied:
        status["denied"] = True
    if decision.reason:
        status["reason"] = decision.reason
    return status


def self_subject_access_review(user: Any, body: Any) -> dict[str, Any]:
    """May the asking user do what ``spec.resourceAttributes`` (or
    ``spec.nonResourceAttributes``) describes?"""
    kind = "SelfSubjectAccessReview"
    spec = _spec(kind, body)
    given = [key for key in ("resourceAttributes", "nonResourceAttributes") if spec.get(key)]
    if len(given) != 1:
        raise errors.invalid_object(
            kind,
            GROUP,
            "",
            [
                errors.invalid(
                    "spec.resourceAttributes",
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                )
            ],
        )
    if given == ["resourceAttributes"]:
        attrs, causes = _strings(spec[given[0]], RESOURCE_KEYS, "spec.resourceAttributes")
        if causes:
            raise errors.invalid_object(kind, GROUP, "", causes)
        decision = review(user, **attrs)
    else:
        attrs, causes = _strings(spec[given[0]], NON_RESOURCE_KEYS, "spec.nonResourceAttributes")
        if causes:
            raise errors.invalid_object(kind, GROUP, "", causes)
        decision = review_non_resource(user, attrs["verb"], attrs["path"])
    return _answer(kind, body, spec, _status(decision))


def self_subject_rules_review(user: Any, body: Any) -> dict[str, Any]:
    """Everything the asking user may do in ``spec.namespace`` (and cluster-wide)."""
    kind = "SelfSubjectRulesReview"
    spec = _spec(kind, body)
    namespace = spec.get("namespace", "")
    if not isinstance(namespace, str):
        raise errors.invalid_object(
            kind, GROUP, "", [FieldError("spec.namespace", errors.TYPE_INVALID, "must be a string")]
        )
    found = rules_review(user, namespace)
    status: dict[str, Any] = {
        "resourceRules": list(found.resource_rules),
        "nonResourceRules": list(found.non_resource_rules),
        "incomplete": found.incomplete,
    }
    if found.evaluation_error:
        status["evaluationError"] = found.evaluation_error
    return _answer(kind, body, spec, status)
