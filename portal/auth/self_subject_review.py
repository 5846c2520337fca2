"""``authentication.k8s.io/v1`` SelfSubjectReview (``kubectl auth whoami``): the asking user's
UserInfo as authentication (and impersonation, when it runs) left it. Answered to every
authenticated user, as kube's system:basic-user allows, and never stored."""

from __future__ import annotations

from typing import Any

from .attributes import UserInfo

GROUP = "authentication.k8s.io"
VERSION = "v1"
KIND = "SelfSubjectReview"
PLURAL = "selfsubjectreviews"


def user_info(info: UserInfo) -> dict[str, Any]:
    """authentication.k8s.io/v1 UserInfo: empty fields are left out (``omitempty``)."""
    out: dict[str, Any] = {"username": info.username}
    if info.uid:
        out["uid"] = info.uid
    if info.groups:
        out["groups"] = list(info.groups)
    if info.extra:
        out["extra"] = {key: list(values) for key, values in info.extra.items()}
    return out


def self_subject_review(user: Any, body: Any) -> dict[str, Any]:
    """Who is asking: the request's body carries nothing to read but its metadata."""
    given = body.get("metadata") if isinstance(body, dict) else None
    metadata = given if isinstance(given, dict) else {}
    return {
        "kind": KIND,
        "apiVersion": f"{GROUP}/{VERSION}",
        "metadata": {**metadata, "creationTimestamp": None},
        "status": {"userInfo": user_info(UserInfo.of(user))},
    }
