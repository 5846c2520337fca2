"""``InvokeGateway``: the ASGI application ``portal.asgi`` puts in front of the portal. It
answers ``/v1/namespaces/{ns}/runs/{name}/{uid}/invoke`` itself and hands every other request
to the application it wraps, untouched.

An invocation, in order: the method (POST, else 405), the invocation ID, the caller (401), may
they ``create runs/invoke`` on this Run (403, asked with the path's namespace and name before
anything about the Run is told), the Run (404 unknown or another uid, 400 not a function Run,
409 finished, 503 not Ready yet or being deleted), the timeout and the body (400, 413), then
one gRPC call to the Run's runtimed, whose answer is the response (200 with the function's
output, or the Status its gRPC code maps to). Every failure is a Kubernetes Status carrying
the invocation ID; each is counted and logged once, a success is only counted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from asgiref.sync import sync_to_async
from django.db import DatabaseError

from portal.machinery import errors
from runtimed.protocol import INVOCATION_ID_HEADER, Phase, status_message
from scheduling.models import TERMINAL_PHASES

from . import access, forward, incoming, metrics
from .failures import REASONS, InvokeFailure, body, failure
from .ownership import Ownership, ownership, read
from .paths import invoke_target

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OUTPUTS_HEADER = "X-Kruntime-Outputs"
MAX_OUTPUTS_HEADER_BYTES = 8192
RETRY_SECONDS = 1
_INVOCATION = INVOCATION_ID_HEADER.lower().encode()
_OUTPUTS = OUTPUTS_HEADER.lower().encode()
_JSON = b"application/json"


class InvokeGateway:
    """Serves function invocations; everything else goes to ``app``."""

    def __init__(self, app: ASGIApp, *, routes: Ownership | None = None) -> None:
        self.app = app
        self.routes = routes or ownership

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = invoke_target(scope["path"]) if scope["type"] == "http" else None
        if target is None:
            await self.app(scope, receive, send)
            return
        await self.invoke(scope, receive, send, *target)

    async def invoke(
        self, scope: Scope, receive: Receive, send: Send, namespace: str, name: str, uid: str
    ) -> None:
        headers = incoming.read_headers(scope["headers"])
        invocation = ""  # until read: a failure before then answers with a fresh one
        try:
            if scope["method"] != "POST":
                raise failure(
                    405,
                    f"the method {scope['method'][:16]} is not allowed: invoke with POST",
                    headers=((b"allow", b"POST"),),
                )
            invocation = incoming.invocation_id(headers.invocation_id)
            if headers.impersonates:
                raise failure(
                    400,
                    "the invoke gateway serves no Impersonate-* headers: invoke as yourself",
                    causes=[errors.forbidden("Impersonate-User", "not served here")],
                )
            caller = await access.authenticate(headers.authorization)
            await access.authorize(caller, namespace, name, uid)
            target = await self.route(namespace, name, uid)
            timeout = incoming.timeout_seconds(
                incoming.query_timeout(scope.get("query_string") or b""), headers.timeout
            )
            content_type = incoming.content_type(headers.content_type)
            incoming.declared_length(headers.content_length)
            payload = await incoming.read_body(receive)
            try:
                answer = await forward.invoke(target, invocation, payload, content_type, timeout)
            except forward.UpstreamError as exc:
                raise self.upstream_failure(exc, namespace, name, target) from None
        except incoming.ClientGone:
            return
        except InvokeFailure as failed:
            await self.fail(send, failed, invocation, namespace, name, uid)
            return
        except Exception:  # a fault of the gateway itself: logged with its traceback
            invocation = invocation or incoming.new_invocation_id()
            log.exception(
                "function invoke failed inside the gateway: namespace=%s run=%s uid=%s "
                "invocation=%s",
                namespace,
                name,
                uid,
                invocation,
            )
            fault = failure(500, "the invoke gateway failed; see the portal's log")
            await self.fail(send, fault, invocation, namespace, name, uid, logged=True)
            return
        await self.succeed(send, answer, invocation)

    async def route(self, namespace: str, name: str, uid: str) -> forward.Target:
        """Where the Run is served, from memory (one database read for a Run not yet seen)."""
        routes = self.routes
        if routes._listener is None:  # the first invocation of the process
            await sync_to_async(routes.listen, thread_sensitive=False)()
        owner = routes.known(namespace, name)
        if owner is None and not routes.absent(namespace, name):
            try:
                owner = routes.learn(namespace, name, await read(namespace, name))
            except DatabaseError as exc:
                raise _database_failure(exc) from None
        if owner is None or owner.uid != uid:
            raise _not_found(name)
        if not owner.function:
            raise failure(
                400,
                f'Run "{name}" is not a function Run: spec.mode.function is not set, so it '
                "cannot be invoked",
                name=name,
                causes=[errors.invalid("spec.mode.function", "the Run is not in function mode")],
            )
        if owner.terminating:
            raise failure(503, f'Run "{name}" is being deleted: it takes no invocations', name=name)
        if owner.phase in TERMINAL_PHASES:
            raise failure(
                409,
                f'Run "{name}" has finished (phase {owner.phase}): it takes no invocations',
                reason="Conflict",
                name=name,
            )
        if owner.phase != Phase.READY or not owner.pod_uid:
            raise failure(
                503,
                f'Run "{name}" is not ready yet (phase {owner.phase}): retry',
                retry_after=RETRY_SECONDS,
                name=name,
            )
        address = routes.addresses.get(owner.pod_uid)
        if not address:
            try:
                found = await read(namespace, name, owner.pod_uid)
            except DatabaseError as exc:
                raise _database_failure(exc) from None
            routes.learn_address(owner.pod_uid, found.address)
            address = found.address
            if not address:
                raise failure(
                    503,
                    f'Run "{name}" cannot be reached: its pod {owner.pod} serves no dataplane',
                    retry_after=RETRY_SECONDS,
                    name=name,
                )
        return forward.Target(address, owner.uid, owner.attempt, owner.pod_uid, namespace)

    def upstream_failure(
        self, exc: forward.UpstreamError, namespace: str, name: str, target: forward.Target
    ) -> InvokeFailure:
        mapped = forward.status_for(exc)
        metrics.upstream_error(exc.code().name)
        if mapped.forget_run:
            self.routes.forget(namespace, name)
        if mapped.forget_address:
            self.routes.forget_address(target.pod_uid)
            forward.channels().drop(target.address)
        detail = status_message(exc.details() or "", 1024)
        message = f"{mapped.message}: {detail}" if detail else mapped.message
        return failure(
            mapped.code,
            message,
            reason=mapped.reason,
            retry_after=mapped.retry_after,
            name=name,
        )

    async def succeed(self, send: Send, answer: Any, invocation: str) -> None:
        output = answer.output
        headers = [
            (b"content-type", _header_value(answer.content_type) or _JSON),
            (b"content-length", str(len(output)).encode()),
            (_INVOCATION, _header_value(answer.invocation_id) or invocation.encode()),
        ]
        if answer.outputs:
            encoded = json.dumps(dict(answer.outputs), separators=(",", ":")).encode()
            if len(encoded) <= MAX_OUTPUTS_HEADER_BYTES:
                headers.append((_OUTPUTS, encoded))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": output})
        metrics.answered(200)

    async def fail(
        self,
        send: Send,
        failed: InvokeFailure,
        invocation: str,
        namespace: str,
        name: str,
        uid: str,
        *,
        logged: bool = False,
    ) -> None:
        invocation = invocation or incoming.new_invocation_id()
        content = body(failed, invocation)
        headers = [
            (b"content-type", _JSON),
            (b"content-length", str(len(content)).encode()),
            (_INVOCATION, invocation.encode()),
            *failed.headers,
        ]
        if failed.retry_after:
            headers.append((b"retry-after", str(failed.retry_after).encode()))
        await send({"type": "http.response.start", "status": failed.code, "headers": headers})
        await send({"type": "http.response.body", "body": content})
        metrics.answered(failed.code)
        if not logged:
            log.warning(
                "function invoke failed: namespace=%s run=%s uid=%s invocation=%s code=%d "
                "reason=%s message=%s",
                namespace,
                name,
                uid,
                invocation,
                failed.code,
                failed.status.reason,
                failed.status.message,
            )


def _not_found(name: str) -> InvokeFailure:
    found = errors.not_found("runs", _group(), name)
    return InvokeFailure(found)


def _group() -> str:
    from scheduling.kinds import GROUP

    return GROUP


def _database_failure(exc: DatabaseError) -> InvokeFailure:
    log.warning("the invoke gateway could not read the Run: %s", type(exc).__name__)
    return failure(
        503, "cannot route the invocation now: the database is unavailable", retry_after=1
    )


def _header_value(value: str) -> bytes:
    """``value`` as a header, or b"" when it could not be one (control characters, too long)."""
    if not value or len(value) > 256 or not value.isascii() or not value.isprintable():
        return b""
    return value.encode("ascii")


__all__ = ["REASONS", "InvokeGateway"]
