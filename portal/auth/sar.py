"""Authorization by the cluster: an ``authorization.k8s.io/v1`` SubjectAccessReview.

Fails closed: a timeout, a transport error, a 5xx or an unreadable answer denies. A review
waits at most ``KRUNTIMES_SAR_TIMEOUT_SECONDS``, or less inside an ``authorizer.budget``.
"""

from __future__ import annotations

import logging

import urllib3
from django.conf import settings
from kubernetes import client

from portal.kube import api_client

from .authorizer import (
    Decision,
    NonResourceAttributes,
    ResourceAttributes,
    RuleList,
    UserInfo,
    time_left,
)

CANNOT_LIST = (
    "the SubjectAccessReview authorizer cannot list rules: ask about one request instead "
    "(kubectl auth can-i VERB RESOURCE)"
)

log = logging.getLogger(__name__)


def review_body(
    user: UserInfo, attrs: ResourceAttributes | NonResourceAttributes
) -> client.V1SubjectAccessReview:
    """The SubjectAccessReview for one request; empty fields are omitted, as client-go does."""
    extra = {
        key: [str(v) for v in (value if isinstance(value, list | tuple) else [value])]
        for key, value in (user.extra or {}).items()
    }
    if isinstance(attrs, NonResourceAttributes):
        non_resource = client.V1NonResourceAttributes(path=attrs.path, verb=attrs.verb)
        return _review(user, extra, non_resource_attributes=non_resource)
    resource = client.V1ResourceAttributes(
        namespace=attrs.namespace or None,
        verb=attrs.verb or None,
        group=attrs.group or None,
        version=attrs.version or None,
        resource=attrs.resource or None,
        subresource=attrs.subresource or None,
        name=attrs.name or None,
    )
    return _review(user, extra, resource_attributes=resource)


def _review(user: UserInfo, extra: dict, **attributes) -> client.V1SubjectAccessReview:
    spec = client.V1SubjectAccessReviewSpec(
        user=user.username,
        uid=user.uid or None,
        groups=list(user.groups) or None,
        extra=extra or None,
        **attributes,
    )
    return client.V1SubjectAccessReview(
        api_version="authorization.k8s.io/v1", kind="SubjectAccessReview", spec=spec
    )


def failure_reason(exc: Exception, timeout: float) -> str:
    """A short, secret-free account of why the review did not come back."""
    status = getattr(exc, "status", None)
    if isinstance(exc, client.ApiException) and isinstance(status, int) and status:
        return f"HTTP {status} {exc.reason or ''}".strip()
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
        exc = exc.reason
    # NewConnectionError subclasses ConnectTimeoutError in urllib3 2, so it goes first
    if isinstance(exc, urllib3.exceptions.TimeoutError) and not isinstance(
        exc, urllib3.exceptions.NewConnectionError
    ):
        return f"no answer within {timeout:.3g}s"
    if isinstance(exc, urllib3.exceptions.HTTPError):
        return f"cannot reach the Kubernetes API ({type(exc).__name__})"
    return type(exc).__name__


class SubjectAccessReviewAuthorizer:
    def rules(self, user: UserInfo, namespace: str) -> RuleList:
        return RuleList(incomplete=True, evaluation_error=CANNOT_LIST)

    def review_non_resource(self, user: UserInfo, attrs: NonResourceAttributes) -> Decision:
        return self.review(user, attrs)

    def review(self, user: UserInfo, attrs: ResourceAttributes | NonResourceAttributes) -> Decision:
        body = review_body(user, attrs)
        timeout = time_left(settings.KRUNTIMES_SAR_TIMEOUT_SECONDS)
        if timeout <= 0:
            return Decision(False, "authorization check failed: no time left to ask")
        try:
            api = client.AuthorizationV1Api(
                api_client(host=getattr(settings, "KRUNTIMES_KUBERNETES_HOST", None))
            )
            result = api.create_subject_access_review(body, _request_timeout=timeout)
            status = result.status
            if status is None:
                raise ValueError("the SubjectAccessReview came back without a status")
        except Exception as exc:  # noqa: BLE001 - any failure denies (fail closed)
            log.warning(
                "SubjectAccessReview for %s %s %s failed; denying",
                user.username,
                attrs.verb,
                getattr(attrs, "resource", "") or getattr(attrs, "path", ""),
                exc_info=True,
            )
            return Decision(False, f"authorization check failed: {failure_reason(exc, timeout)}")
        reason = status.reason or status.evaluation_error or ""
        if status.allowed and not status.denied:
            return Decision(True, reason)
        return Decision(
            False, reason or "denied by the cluster's authorizer", denied=bool(status.denied)
        )
