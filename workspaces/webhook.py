"""``POST /apis/admission.kruntimes.io/v1/validate``: the validating admission webhook for Run
CREATE (seed 002, permission boundary rule 1), for a cluster whose API server stores the Runs.

It answers an ``admission.k8s.io/v1`` AdmissionReview with the same check the portal's own
store runs (``workspaces.review.admit``), for the request's ``userInfo``, within
``WEBHOOK_SECONDS`` (the use review gets at most ``review.USE_REVIEW_SECONDS`` of it). The
answer echoes ``request.uid``: ``allowed`` and, when refused, ``status{code, reason, message}``.

- Operations other than CREATE are allowed (``spec.workspace`` is immutable afterwards), as is
  a Run without ``spec.workspace``.
- A review that cannot be read (not JSON, too large, another apiVersion/kind, no request or
  uid) is a 400 Status; one with a uid but no usable object, userInfo or the wrong resource is
  answered ``allowed: false`` with a message. Nothing here is a 500: an unexpected failure is
  a refusal too (the webhook fails closed, as ``failurePolicy: Fail`` does when it is down).

The caller authenticates with a bearer token, as for the API, and must be allowed ``create``
on ``subjectaccessreviews.authorization.k8s.io``: like a SubjectAccessReview, the answer says
what another subject may do. In a cluster that caller is the API server, over TLS
(``deploy/helm/kruntimes-portal/templates/webhook.yaml``).
"""

from __future__ import annotations

import logging
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.auth.authorizer import UserInfo, budget, review
from portal.machinery import errors
from portal.machinery.decoding import DecodeError, load_json, max_request_bytes
from portal.machinery.views import status_exception_handler
from scheduling.artifact_access import admit as admit_artifact_inputs

from .kinds import GROUP, VERSION
from .review import admit

log = logging.getLogger(__name__)

WEBHOOK_SECONDS = 5.0
API_VERSION = "admission.k8s.io/v1"
RUN_KIND = {"group": GROUP, "version": VERSION, "kind": "Run"}
RUN_RESOURCE = {"group": GROUP, "version": VERSION, "resource": "runs"}


class Refused(Exception):
    """A review with a uid that cannot be admitted as it is: answered ``allowed: false``."""

    def __init__(self, message: str, code: int = 400, reason: str = "BadRequest") -> None:
        super().__init__(message)
        self.status = {"code": code, "reason": reason, "message": message}


def read_review(request: Request) -> dict[str, Any]:
    """The AdmissionReview's ``request``, or a 400 StatusError when no uid can be echoed."""
    limit = max_request_bytes()
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if not declared.isdigit() or int(declared) > limit:
        raise errors.bad_request(f"the AdmissionReview is larger than {limit} bytes")
    raw = request.stream.read(limit + 1) if request.stream is not None else b""
    if len(raw) > limit:
        raise errors.bad_request(f"the AdmissionReview is larger than {limit} bytes")
    try:
        body = load_json(raw)
    except DecodeError as exc:
        raise errors.bad_request(f"the body is not an AdmissionReview: {exc}") from None
    if not isinstance(body, dict):
        raise errors.bad_request("the body is not an AdmissionReview: not an object")
    if (body.get("apiVersion"), body.get("kind")) != (API_VERSION, "AdmissionReview"):
        raise errors.bad_request(f"expected apiVersion {API_VERSION}, kind AdmissionReview")
    req = body.get("request")
    if not isinstance(req, dict) or not isinstance(req.get("uid"), str) or not req["uid"]:
        raise errors.bad_request("the AdmissionReview has no request.uid")
    return req


def user_of(req: dict[str, Any]) -> UserInfo:
    info = req.get("userInfo")
    username = info.get("username") if isinstance(info, dict) else None
    if not isinstance(username, str) or not username:
        raise Refused("request.userInfo.username is required")
    groups = info.get("groups") or []
    extra = info.get("extra") or {}
    uid = info.get("uid") or ""
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise Refused("request.userInfo.groups must be a list of strings")
    if not isinstance(extra, dict) or not isinstance(uid, str):
        raise Refused("request.userInfo.extra must be an object and uid a string")
    return UserInfo(username=username, uid=uid, groups=tuple(groups), extra=extra)


def decide(req: dict[str, Any]) -> dict[str, Any]:
    """The ``response`` for one AdmissionReview request (uid echoed)."""
    if req.get("operation") != "CREATE":
        return {"allowed": True}
    if req.get("resource") != RUN_RESOURCE or req.get("kind") != RUN_KIND or req.get("subResource"):
        raise Refused("this webhook admits only creates of runs.kruntimes.io/v1alpha1")
    run = req.get("object")
    if not isinstance(run, dict) or not isinstance(run.get("spec", {}), dict):
        raise Refused("request.object must be a Run with an object spec")
    spec = run.get("spec") or {}
    if not spec.get("workspace") and not spec.get("artifactInputs"):
        return {"allowed": True}
    meta = run.get("metadata") or {}
    namespace = req.get("namespace") or (meta.get("namespace") if isinstance(meta, dict) else "")
    if not isinstance(namespace, str) or not namespace or not isinstance(meta, dict):
        raise Refused("request.namespace is required for a Run")
    user = user_of(req)
    if spec.get("artifactInputs"):
        admit_artifact_inputs(run, namespace, user)
    if spec.get("workspace"):
        admit(run, namespace, user)
    return {"allowed": True}


def answer(uid: str, response: dict[str, Any]) -> Response:
    return Response(
        {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": {"uid": uid, **response}}
    )


REVIEW_SCHEMA = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string", "enum": [API_VERSION]},
        "kind": {"type": "string", "enum": ["AdmissionReview"]},
        "request": {"type": "object", "additionalProperties": True},
        "response": {"type": "object", "additionalProperties": True},
    },
}


class ValidateRunView(APIView):
    """Authenticated as the API is (bearer token); never 500s."""

    parser_classes: list[Any] = []  # the body is read, bounded, by read_review

    def get_exception_handler(self):  # type: ignore[no-untyped-def]
        return status_exception_handler

    @extend_schema(
        operation_id="validateRunAdmission",
        request={"application/json": REVIEW_SCHEMA},
        responses={200: REVIEW_SCHEMA},
        tags=["admission.kruntimes.io/v1"],
        description="A validating admission webhook for Run CREATE: admission.k8s.io/v1 "
        "AdmissionReview in, the same review with response.uid and allowed out.",
    )
    def post(self, request: Request) -> Response:
        allowed = review(request.user, "create", "authorization.k8s.io", "subjectaccessreviews")
        if not allowed.allowed:
            raise errors.forbidden_status(
                f'User "{UserInfo.of(request.user).username}" cannot create resource '
                '"subjectaccessreviews" in API group "authorization.k8s.io": the webhook '
                "answers what another subject may do"
            )
        req = read_review(request)
        try:
            with budget(WEBHOOK_SECONDS):
                return answer(req["uid"], decide(req))
        except Refused as exc:
            return answer(req["uid"], {"allowed": False, "status": exc.status})
        except errors.StatusError as exc:
            status = {"code": exc.code, "reason": exc.reason, "message": exc.message}
            return answer(req["uid"], {"allowed": False, "status": status})
        except Exception as exc:  # noqa: BLE001 - fail closed, never a 500
            log.exception("admission review %s failed; refusing", req["uid"])
            message = f"the admission check failed: {type(exc).__name__}"
            status = {"code": 500, "reason": "InternalError", "message": message}
            return answer(req["uid"], {"allowed": False, "status": status})
