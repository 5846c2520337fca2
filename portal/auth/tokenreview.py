"""Authentication by the cluster: ServiceAccount bearer tokens checked with an
``authentication.k8s.io/v1`` TokenReview, as kube-apiserver's webhook token authenticator does.

- Only a JWT-shaped bearer token (three base64url segments) is the cluster's to judge; any other
  token (the portal's own DRF tokens are 40 hex digits) is left to the next authentication
  class. Served when ``KRUNTIMES_TOKEN_REVIEW`` is on (the default with
  ``KRUNTIMES_CLUSTER=kubernetes``).
- An authenticated answer becomes a ``ClusterUser`` whose ``user_info`` (username such as
  ``system:serviceaccount:<ns>:<name>``, uid, groups, extra) is what RBAC or the
  SubjectAccessReview authorizer then sees (``UserInfo.of``).
- A token the cluster does not accept is a 401 Status; a TokenReview that cannot be asked
  (unreachable, timeout, 5xx, an unreadable answer) is a 503 Status, never a 500.
- With ``KRUNTIMES_TOKEN_AUDIENCES`` the review asks for those audiences and an answer whose
  ``status.audiences`` shares none of them is not accepted, as kube-apiserver checks.
- Answers (accepted or not) are kept ``KRUNTIMES_TOKEN_REVIEW_CACHE_SECONDS`` at most, keyed by
  the token's SHA-256, in a bounded in-process cache; failures to ask are never kept. The token
  itself is never logged nor kept.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from django.conf import settings
from kubernetes import client
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from portal.kube import api_client
from portal.machinery import errors

from .authorizer import UserInfo
from .sar import failure_reason

log = logging.getLogger(__name__)

JWT = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$")
# kube-apiserver bounds its token cache too; a flood of distinct tokens evicts the oldest
CACHE_ENTRIES = 4096
NOT_ACCEPTED = "Unauthorized: the bearer token was not accepted by the cluster"


@dataclass(frozen=True)
class Review:
    """One TokenReview's verdict: a UserInfo, or why not (kept out of responses)."""

    user: UserInfo | None
    error: str = ""


class ClusterUser:
    """``request.user`` for a token the cluster authenticated: no Django user behind it."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False
    pk = None
    id = None

    def __init__(self, info: UserInfo) -> None:
        self.user_info = info

    @property
    def username(self) -> str:
        return self.user_info.username

    def get_username(self) -> str:
        return self.user_info.username

    def __str__(self) -> str:
        return self.user_info.username

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClusterUser) and other.user_info == self.user_info

    def __hash__(self) -> int:
        return hash(self.user_info)


class ReviewCache:
    """Verdicts by token digest for at most ``ttl`` seconds, ``size`` entries (oldest out)."""

    def __init__(self, size: int = CACHE_ENTRIES) -> None:
        self.size = size
        self._entries: OrderedDict[str, tuple[float, Review]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Review | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            if found[0] <= time.monotonic():
                del self._entries[key]
                return None
            return found[1]

    def put(self, key: str, review: Review, ttl: float) -> None:
        if ttl <= 0:
            return
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (time.monotonic() + ttl, review)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


cache = ReviewCache()


def cache_key(token: str, audiences: tuple[str, ...]) -> str:
    digest = hashlib.sha256(token.encode())
    for audience in audiences:
        digest.update(b"\0" + audience.encode())
    return digest.hexdigest()


def review_body(token: str, audiences: tuple[str, ...]) -> client.V1TokenReview:
    return client.V1TokenReview(
        api_version="authentication.k8s.io/v1",
        kind="TokenReview",
        spec=client.V1TokenReviewSpec(token=token, audiences=list(audiences) or None),
    )


def verdict(result: client.V1TokenReview, audiences: tuple[str, ...]) -> Review:
    """The Review an answered TokenReview means (ValueError when it cannot be read)."""
    status = result.status
    if status is None:
        raise ValueError("the TokenReview came back without a status")
    if not status.authenticated:
        return Review(None, status.error or "not authenticated")
    if audiences and not set(audiences) & set(status.audiences or ()):
        return Review(None, "the token is not meant for this portal's audiences")
    user = status.user
    if user is None or not user.username:
        raise ValueError("the TokenReview authenticated no username")
    extra = {key: list(values or ()) for key, values in (user.extra or {}).items()}
    info = UserInfo(
        username=user.username, uid=user.uid or "", groups=tuple(user.groups or ()), extra=extra
    )
    return Review(info)


def ask(token: str) -> Review:
    """The cluster's verdict on ``token`` (cached), or a 503 StatusError when it cannot say."""
    audiences = tuple(settings.KRUNTIMES_TOKEN_AUDIENCES)
    key = cache_key(token, audiences)
    cached = cache.get(key)
    if cached is not None:
        return cached
    timeout = settings.KRUNTIMES_TOKEN_REVIEW_TIMEOUT_SECONDS
    try:
        api = client.AuthenticationV1Api(
            api_client(host=getattr(settings, "KRUNTIMES_KUBERNETES_HOST", None))
        )
        result = api.create_token_review(review_body(token, audiences), _request_timeout=timeout)
        found = verdict(result, audiences)
    except Exception as exc:  # noqa: BLE001 - any failure to ask is a 503, never a 500
        reason = failure_reason(exc, timeout)
        # no exc_info: an exception's text may quote the request, and the request is the token
        log.warning("TokenReview failed: %s", reason)
        raise errors.StatusError(
            503,
            "ServiceUnavailable",
            f"cannot authenticate the bearer token: the TokenReview failed ({reason}); retry",
        ) from None
    cache.put(key, found, settings.KRUNTIMES_TOKEN_REVIEW_CACHE_SECONDS)
    return found


class TokenReviewAuthentication(BaseAuthentication):
    """DRF authentication of ServiceAccount (JWT) bearer tokens by TokenReview."""

    def authenticate(self, request):
        if not settings.KRUNTIMES_TOKEN_REVIEW:
            return None
        auth = get_authorization_header(request).split()
        if len(auth) != 2 or auth[0].lower() != b"bearer":
            return None
        try:
            token = auth[1].decode("ascii")
        except UnicodeError:
            return None
        if not JWT.match(token):
            return None
        found = ask(token)
        if found.user is None:
            log.info("bearer token not accepted by the cluster: %s", found.error)
            raise exceptions.AuthenticationFailed(NOT_ACCEPTED)
        return ClusterUser(found.user), None

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="kruntimes"'
