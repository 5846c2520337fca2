"""Who calls, and may they invoke this Run: the API's own authentication classes and
authorizer, asked once per token (and per Run) and remembered a short while.

- Authentication runs the API's ``DEFAULT_AUTHENTICATION_CLASSES`` (the portal's DRF tokens;
  ServiceAccount JWTs by TokenReview when that is on) on the ``Authorization`` header, minus
  the session (a cookie is no credential for an API client). The answer is kept by the
  header's SHA-256 for at most ``AUTHENTICATED_SECONDS`` (a refused one for
  ``REFUSED_SECONDS``), never past the expiry a JWT states; the token itself is never kept
  nor logged.
- Authorization is the API's ``review`` (superusers, the built-in identities, then RBAC or
  SubjectAccessReview): ``create`` on ``runs/invoke`` in the Run's namespace for the Run's name,
  kept by (digest, namespace, name, uid) as long (a denial for ``REFUSED_SECONDS``, so a new
  RoleBinding takes effect soon).
- A cache miss runs that sync code on a worker thread (``sync_to_async``, not thread
  sensitive) and gives its database connection back at once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.db import DatabaseError, connection
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.settings import api_settings

from portal.auth.attributes import Decision, UserInfo
from portal.auth.authorizer import review
from portal.machinery.admission import forbidden_resource
from portal.machinery.errors import StatusError

from .caches import TtlCache
from .failures import InvokeFailure, failure

AUTHENTICATED_SECONDS = 30.0
REFUSED_SECONDS = 5.0
VERB, RESOURCE, SUBRESOURCE = "create", "runs", "invoke"
UNAUTHORIZED = ((b"www-authenticate", b'Bearer realm="kruntimes"'),)


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated caller: who (as the authorizer sees them) and the header's digest."""

    user: UserInfo
    digest: bytes


_REFUSED = UserInfo(username="")  # a remembered refusal
identities: TtlCache[UserInfo] = TtlCache()
decisions: TtlCache[Decision] = TtlCache()


def clear() -> None:
    """Forget every remembered answer (tests; a process never needs to)."""
    identities.clear()
    decisions.clear()


class _HeaderRequest:
    """What DRF's token authentication classes read of a request: the Authorization header
    (``headers``, or ``META`` in older DRF)."""

    __slots__ = ("META", "headers")

    def __init__(self, authorization: str) -> None:
        self.META = {"HTTP_AUTHORIZATION": authorization}
        self.headers = {"authorization": authorization, "Authorization": authorization}


def _authentications() -> list[BaseAuthentication]:
    """The API's authentication classes but the session's (a cookie is no API credential)."""
    configured: list[Any] = list(api_settings.DEFAULT_AUTHENTICATION_CLASSES)
    return [cls() for cls in configured if not issubclass(cls, SessionAuthentication)]


def _release_connection() -> None:
    # the worker thread's connection goes back to the pool (a test's transaction keeps it)
    if not connection.in_atomic_block:
        connection.close()


def _authenticate_sync(authorization: str) -> UserInfo | None:
    """The API's verdict on ``authorization``: the caller, or None (not accepted)."""
    try:
        request = _HeaderRequest(authorization)
        for authentication in _authentications():
            try:
                found = authentication.authenticate(request)  # type: ignore[arg-type]
            except exceptions.AuthenticationFailed:
                return None
            if found is not None:
                return UserInfo.of(found[0])
        return None
    finally:
        _release_connection()


def _authorize_sync(user: UserInfo, namespace: str, name: str) -> Decision:
    try:
        return review(user, VERB, _group(), RESOURCE, SUBRESOURCE, namespace, name)
    finally:
        _release_connection()


def _group() -> str:
    from scheduling.kinds import GROUP

    return GROUP


_authenticate = sync_to_async(_authenticate_sync, thread_sensitive=False)
_authorize = sync_to_async(_authorize_sync, thread_sensitive=False)


def jwt_expiry(token: str) -> float | None:
    """The wall-clock expiry (``exp``) a JWT-shaped token states, unverified: it only ever
    shortens how long an answer is kept; None when the token states none."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None
    expiry = payload.get("exp") if isinstance(payload, dict) else None
    if isinstance(expiry, bool) or not isinstance(expiry, int | float):
        return None
    return float(expiry)


def _keep_for(authorization: str) -> float:
    token = authorization.split(None, 1)[-1]
    expiry = jwt_expiry(token)
    if expiry is None:
        return AUTHENTICATED_SECONDS
    return min(AUTHENTICATED_SECONDS, expiry - time.time())


async def authenticate(authorization: bytes | None) -> Caller:
    """The caller the ``Authorization`` header names, or a 401 failure."""
    if not authorization:
        raise failure(401, "Unauthorized", headers=UNAUTHORIZED)
    digest = hashlib.sha256(authorization).digest()
    user = identities.get(digest)
    if user is None:
        try:
            text = authorization.decode("latin-1")
            found = await _authenticate(text)
        except StatusError as exc:  # the cluster could not be asked (TokenReview): not kept
            raise InvokeFailure(exc, retry_after=1) from None
        except DatabaseError:
            raise failure(
                503, "cannot authenticate now: the database is unavailable", retry_after=1
            ) from None
        if found is None:
            identities.put(digest, _REFUSED, REFUSED_SECONDS)
            raise failure(401, "Unauthorized", headers=UNAUTHORIZED)
        identities.put(digest, found, _keep_for(text))
        user = found
    elif user is _REFUSED:
        raise failure(401, "Unauthorized", headers=UNAUTHORIZED)
    return Caller(user, digest)


async def authorize(caller: Caller, namespace: str, name: str, uid: str) -> None:
    """Nothing when ``caller`` may invoke the Run, else a 403 failure in kube's words."""
    key = (caller.digest, namespace, name, uid)
    decision = decisions.get(key)
    if decision is None:
        try:
            decision = await _authorize(caller.user, namespace, name)
        except DatabaseError:
            raise failure(
                503, "cannot authorize now: the database is unavailable", retry_after=1
            ) from None
        decisions.put(key, decision, AUTHENTICATED_SECONDS if decision.allowed else REFUSED_SECONDS)
    if not decision.allowed:
        denied = forbidden_resource(
            RESOURCE, _group(), caller.user, VERB, namespace, name, SUBRESOURCE, decision.reason
        )
        raise InvokeFailure(denied)
