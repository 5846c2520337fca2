"""The resource endpoints over HTTP: get, list, watch, create, PUT, PATCH, delete.

``route`` reads a request path as kube-apiserver does (``/api/v1/namespaces`` is the
namespaces resource, ``/api/v1/namespaces/x/pods`` pods in x); ``serve`` answers it from
the store, every error a ``Status``. A watch streams JSON lines: the initial events, then
live ones until ``timeoutSeconds`` (default ``DEFAULT_WATCH_SECONDS``), ``end_watches()`` or
the client leaving; a ``resourceVersion`` older than the retained history is one ERROR
event carrying the 410 Expired Status, then the end, exactly as the API server answers.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

import aiohttp.web

from . import errors, patches, selectors
from .store import Store, Watcher

DEFAULT_WATCH_SECONDS = 1800.0
# how often an idle watch checks that its client is still there
WATCH_POLL_SECONDS = 0.5


@dataclass(frozen=True)
class Route:
    group: str
    version: str
    plural: str
    namespace: str | None
    name: str | None
    subresource: str | None


def route(path: str) -> Route | None:
    """The resource a path names, or None for discovery and non-resource paths."""
    parts = [part for part in path.split("/") if part]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    is_namespace_subresource = group == "" and len(rest) == 3 and rest[2] in ("status", "finalize")
    if rest[0] == "namespaces" and len(rest) >= 3 and not is_namespace_subresource:
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return None
    return Route(
        group,
        version,
        rest[0],
        namespace,
        rest[1] if len(rest) > 1 else None,
        rest[2] if len(rest) > 2 else None,
    )


def status_response(error: errors.StatusError) -> aiohttp.web.Response:
    return aiohttp.web.json_response(error.status(), status=error.code)


async def _body(request: aiohttp.web.BaseRequest):
    text = await request.text()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        raise errors.bad_request("the body of the request is not JSON", field="body") from None


def _predicate(request: aiohttp.web.BaseRequest, where: Route):
    labels = selectors.label_selector(request.query.get("labelSelector"))
    fields = selectors.field_selector(request.query.get("fieldSelector"), where.group, where.plural)
    if where.name is not None:  # a watch of one object (GET .../pods/x?watch=true)
        name_fields = selectors.field_selector(
            f"metadata.name={where.name}", where.group, where.plural
        )
    else:
        name_fields = None
    return lambda obj: labels(obj) and fields(obj) and (name_fields is None or name_fields(obj))


async def serve(
    store: Store, request: aiohttp.web.BaseRequest, where: Route
) -> aiohttp.web.StreamResponse:
    try:
        return await _serve(store, request, where)
    except errors.StatusError as error:
        return status_response(error)


async def _serve(
    store: Store, request: aiohttp.web.BaseRequest, where: Route
) -> aiohttp.web.StreamResponse:
    method = request.method.upper()
    g, p, ns, name, sub = where.group, where.plural, where.namespace, where.name, where.subresource
    if sub not in (None, "status"):
        raise errors.StatusError(
            404, "NotFound", f"the server could not find the requested resource ({sub})"
        )
    if method == "GET" and request.query.get("watch") in ("true", "1"):
        return await watch(store, request, where)
    if method == "GET" and name is None:
        return aiohttp.web.json_response(store.list(g, p, ns, _predicate(request, where)))
    if method == "GET":
        return aiohttp.web.json_response(store.get(g, p, ns, name))
    body = await _body(request)
    if method == "POST" and name is None:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of a create must be an object", field="body")
        return aiohttp.web.json_response(store.create(g, p, ns, body), status=201)
    if method == "PUT" and name is not None:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of an update must be an object", field="body")
        return aiohttp.web.json_response(store.replace(g, p, ns, name, body, subresource=sub))
    if method == "PATCH" and name is not None:
        apply = patches.applier(request.headers.get("Content-Type", ""), body)
        return aiohttp.web.json_response(store.patch(g, p, ns, name, apply, subresource=sub))
    if method == "DELETE" and name is not None:
        options = body if isinstance(body, dict) else {}
        propagation = options.get("propagationPolicy") or request.query.get("propagationPolicy")
        if propagation is None and options.get("orphanDependents") is not None:
            propagation = "Orphan" if options["orphanDependents"] else "Background"
        deleted = store.delete(
            g, p, ns, name, propagation=propagation, preconditions=options.get("preconditions")
        )
        return aiohttp.web.json_response(deleted)
    raise errors.StatusError(
        405,
        "MethodNotAllowed",
        f"the server does not allow this method on the requested resource ({method})",
    )


async def watch(
    store: Store, request: aiohttp.web.BaseRequest, where: Route
) -> aiohttp.web.StreamResponse:
    since_text = request.query.get("resourceVersion")
    since = None if since_text in (None, "", "0") else int(since_text)
    timeout = float(request.query.get("timeoutSeconds") or DEFAULT_WATCH_SECONDS)
    watcher = Watcher(
        where.group,
        where.plural,
        where.namespace,
        _predicate(request, where),
        asyncio.get_running_loop(),
    )
    response = aiohttp.web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    try:
        initial = store.watch(watcher, since)
    except errors.StatusError as error:
        await response.prepare(request)
        await response.write(
            json.dumps({"type": "ERROR", "object": error.status()}).encode() + b"\n"
        )
        await response.write_eof()
        return response
    try:
        await response.prepare(request)
        for event in initial:
            await response.write(json.dumps(event).encode() + b"\n")
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                event = await asyncio.wait_for(
                    watcher.queue.get(), min(remaining, WATCH_POLL_SECONDS)
                )
            except TimeoutError:
                if request.transport is None or request.transport.is_closing():
                    break
                continue
            if event is None:
                break
            await response.write(json.dumps(event).encode() + b"\n")
        await response.write_eof()
    except (ConnectionResetError, ConnectionError):
        pass
    finally:
        store.unwatch(watcher)
    return response
