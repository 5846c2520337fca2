"""Kubernetes-shaped REST views, one set per registered kind, and the Status error handler."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DatabaseError, DataError
from django.http import Http404
from rest_framework import exceptions as drf_exceptions
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.auth.impersonation import impersonate

from . import (
    admission_warnings,
    delete_options,
    errors,
    managed_fields,
    patches,
    server_side_apply,
    store,
    tables,
    watch,
)
from .admission import authorize
from .collection_delete import delete_collection
from .decoding import max_request_bytes, too_large
from .listing import consistent_list, parse_field_selector
from .manifest import list_item, to_manifest
from .protobuf import ProtobufParser, ProtobufRenderer, serves
from .registry import ResourceKind, ReviewKind
from .streams import RETRY_AFTER_SECONDS
from .yaml import (
    ApplyPatchParser,
    JSONPatchParser,
    MergePatchParser,
    StrategicMergePatchParser,
    StrictJSONParser,
    YAMLParser,
    YAMLRenderer,
)

log = logging.getLogger(__name__)
WRITES = ("POST", "PUT", "PATCH", "DELETE")
_DRF_TO_STATUS: dict[type[drf_exceptions.APIException], tuple[int, str]] = {
    drf_exceptions.NotAuthenticated: (401, "Unauthorized"),
    drf_exceptions.AuthenticationFailed: (401, "Unauthorized"),
    drf_exceptions.PermissionDenied: (403, "Forbidden"),
    drf_exceptions.ParseError: (400, "BadRequest"),
    drf_exceptions.MethodNotAllowed: (405, "MethodNotAllowed"),
    drf_exceptions.NotAcceptable: (406, "NotAcceptable"),
    drf_exceptions.UnsupportedMediaType: (415, "UnsupportedMediaType"),
    drf_exceptions.Throttled: (429, "TooManyRequests"),
    drf_exceptions.NotFound: (404, "NotFound"),
}


def status_response(error: errors.StatusError) -> Response:
    response = Response(error.to_status(), status=error.code)
    if error.code == 401:
        response["WWW-Authenticate"] = 'Bearer realm="kruntimes"'
    if error.code == 429:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def status_exception_handler(exc: Exception, context: Mapping[str, Any]) -> Response:
    """Every API failure becomes a metav1.Status; nothing reaches the client as HTML."""
    if isinstance(exc, errors.StatusError):
        return status_response(exc)
    if isinstance(exc, Http404):
        return status_response(
            errors.StatusError(404, "NotFound", "the server could not find the requested resource")
        )
    for exc_type, (code, reason) in _DRF_TO_STATUS.items():
        if isinstance(exc, exc_type):
            return status_response(errors.StatusError(code, reason, _detail_text(exc.detail)))
    if isinstance(exc, drf_exceptions.ValidationError):
        from .serializers import flatten_errors

        return status_response(
            errors.StatusError(
                422, "Invalid", "the request is invalid", causes=flatten_errors(exc.detail, "")
            )
        )
    if isinstance(exc, DjangoValidationError):
        return status_response(errors.bad_request("; ".join(exc.messages)))
    if isinstance(exc, RequestDataTooBig):
        return status_response(too_large(max_request_bytes()))
    if isinstance(exc, DataError):  # a value the database cannot hold (a NUL byte, say)
        log.warning("storage refused a value serving %s: %s", context.get("request"), exc)
        return status_response(
            errors.bad_request(
                "the request holds a value the storage cannot keep (a control character?)"
            )
        )
    if isinstance(exc, DatabaseError):
        log.exception("database error serving %s", context.get("request"))
        return status_response(
            errors.StatusError(503, "ServiceUnavailable", "the storage is unavailable; retry")
        )
    log.exception("unexpected error serving %s", context.get("request"))
    return status_response(
        errors.StatusError(
            500, "InternalError", f"an internal error occurred: {type(exc).__name__}"
        )
    )


def _detail_text(detail: object) -> str:
    if isinstance(detail, list):
        return "; ".join(map(str, detail))
    if isinstance(detail, dict):
        return "; ".join(f"{k}: {_detail_text(v)}" for k, v in detail.items())
    return str(detail)


class KubeView(APIView):
    kind: ResourceKind = None  # type: ignore[assignment]
    subresource: str = ""
    parser_classes = [
        StrictJSONParser,
        MergePatchParser,
        JSONPatchParser,
        StrategicMergePatchParser,
        YAMLParser,
        ApplyPatchParser,
    ]
    renderer_classes = [JSONRenderer, YAMLRenderer]

    def get_exception_handler(self) -> Callable[[Exception, Mapping[str, Any]], Response]:
        return status_exception_handler

    def get_parsers(self) -> list[Any]:
        """Protobuf bodies are read for every kind, to refuse the ones not built in with 415."""
        return [*super().get_parsers(), ProtobufParser()]

    def get_renderers(self) -> list[Any]:
        """Protobuf answers for the built-in kinds only: custom kinds are JSON, as CRDs are."""
        served = self.kind or getattr(self, "review", None)
        extra = [ProtobufRenderer()] if served and serves(served.api_version, served.kind) else []
        return [*super().get_renderers(), *extra]

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        """Every request records the warnings of its writes: a ``Warning`` header each."""
        with admission_warnings.recording() as warnings:
            response = super().dispatch(request, *args, **kwargs)
        return admission_warnings.attach(response, warnings)

    def perform_authentication(self, request: Request) -> None:
        """Authenticate the sender, then become whom its ``Impersonate-*`` headers name (once
        allowed): every later review, admission check and write sees that user."""
        request.user = impersonate(request.user, request.headers)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if self.kind is not None and self.kind.read_only and request.method in WRITES:
            raise errors.read_only(self.kind.plural, self.kind.group)

    def authorize(
        self, request: Request, verb: str, namespace: str | None, name: str = ""
    ) -> store.WriteContext:
        """The admission chain's first step, before the body is read; a write passes the
        returned context (which remembers the grant) on to the store."""
        context = (
            self.context(request)
            if verb in ("create", "update", "patch")
            else store.WriteContext(user=request.user)
        )
        return authorize(context, self.kind, verb, namespace, name, self.subresource)

    def context(self, request: Request) -> store.WriteContext:
        dry_run = request.query_params.getlist("dryRun")
        for value in dry_run:
            if value != "All":
                raise errors.bad_request(
                    f'unsupported dryRun value "{value}"',
                    [errors.not_supported("dryRun", value, ["All"])],
                )
        manager = request.query_params.get("fieldManager")
        if manager is not None:
            managed_fields.check_manager(manager)
        else:  # kube-apiserver's default: the client's name, from its User-Agent
            manager = (
                managed_fields.manager_from_user_agent(request.META.get("HTTP_USER_AGENT", ""))
                or managed_fields.DEFAULT_MANAGER
            )
        return store.WriteContext(user=request.user, dry_run=bool(dry_run), field_manager=manager)

    def delete_options(self, request: Request) -> delete_options.DeleteOptions:
        """DeleteOptions from the body, or from the query string when there is no body."""
        data: Any = request.data
        present = request.stream is not None  # DRF reads no stream for an empty body
        return delete_options.read(present, data, request.query_params, self.kind.api_version)

    def body(self, request: Request) -> Any:
        """The parsed body: any JSON value (DRF's stubs say ``request.data`` is a dict)."""
        data: Any = request.data
        if data is None or (hasattr(data, "keys") and not isinstance(data, dict)):
            # DRF hands an empty QueryDict for an empty body
            data = dict(data) if data else None
        if data is None:
            raise errors.bad_request("the request has no body")
        return data

    def manifest(self, obj: Any) -> dict[str, Any]:
        return to_manifest(self.kind, obj)

    def read_response(
        self,
        request: Request,
        objects: list[Any],
        plain: Callable[[], dict[str, Any]],
        metadata: dict[str, str] | None = None,
        manifest_of: Callable[[Any], dict[str, Any]] | None = None,
    ) -> Response:
        """What a GET answers: ``plain()``, or a meta.k8s.io Table of ``objects`` when the
        Accept header asks for one."""
        version = tables.requested_table(request.META.get("HTTP_ACCEPT", ""))
        if version is None:
            return Response(plain())
        include = tables.include_object(request.query_params)
        data = tables.table(
            self.kind,
            objects,
            version=version,
            include=include,
            metadata=metadata,
            manifest_of=manifest_of,
        )
        renderer = getattr(request, "accepted_renderer", None)
        base = getattr(renderer, "media_type", "application/json")
        return Response(data, content_type=tables.media_type(base, version))


class CollectionView(KubeView):
    """GET (list) and POST (create) on ``.../<plural>``."""

    def get(self, request: Request, namespace: str | None = None) -> Any:
        params = request.query_params
        if params.get("watch", "") in watch.TRUE:
            self.authorize(request, "watch", namespace)
            fields = parse_field_selector(self.kind, params.get("fieldSelector", ""))
            accept = request.META.get("HTTP_ACCEPT", "")
            wanted = watch.parse_request(self.kind, namespace, params, fields, accept)
            return watch.respond(request._request, request.user.get_username(), wanted)
        self.authorize(request, "list", namespace)
        version, items, token = consistent_list(self.kind, namespace, params)
        metadata = {"resourceVersion": str(version)}
        if token:
            metadata["continue"] = token
        return self.read_response(
            request,
            items,
            lambda: {
                "apiVersion": self.kind.api_version,
                "kind": f"{self.kind.kind}List",
                "metadata": metadata,
                "items": [list_item(self.kind, o) for o in items],
            },
            metadata,
            lambda obj: list_item(self.kind, obj),
        )

    def post(self, request: Request, namespace: str | None = None) -> Response:
        if self.kind.namespaced and namespace is None:
            raise errors.method_not_allowed("create needs a namespace in the path")
        body = self.body(request)
        # Kubernetes authorizes a create without a name: resourceNames cannot restrict it
        context = self.authorize(request, "create", namespace)
        obj = store.create(self.kind, body, namespace=namespace, context=context)
        return Response(self.manifest(obj), status=201)

    def delete(self, request: Request, namespace: str | None = None) -> Response:
        """deletecollection: every object the selectors match, with the same DeleteOptions."""
        if self.kind.namespaced and namespace is None:
            raise errors.method_not_allowed("deletecollection needs a namespace in the path")
        context = self.authorize(request, "deletecollection", namespace)
        options = self.delete_options(request)
        deleted = delete_collection(self.kind, namespace, request.query_params, options, context)
        return Response(
            {
                "apiVersion": self.kind.api_version,
                "kind": f"{self.kind.kind}List",
                "metadata": {},
                "items": [self.manifest(obj) for obj in deleted],
            }
        )


def _has_control_characters(value: str) -> bool:
    return any(ord(char) < 0x20 or ord(char) == 0x7F for char in value)


class ObjectView(KubeView):
    """GET, PUT, PATCH, DELETE on ``.../<plural>/<name>`` (and ``/status`` when subresource)."""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        # no object can have such a name (and some databases cannot even be asked for one)
        for part in ("namespace", "name"):
            if _has_control_characters(kwargs.get(part) or ""):
                raise errors.not_found(self.kind.plural, self.kind.group, repr(kwargs[part])[1:-1])

    def get(self, request: Request, name: str, namespace: str | None = None) -> Response:
        self.authorize(request, "get", namespace, name)
        obj = store.get_object(self.kind, namespace, name)
        version = str(getattr(obj, "resource_version", "") or "")
        return self.read_response(
            request, [obj], lambda: self.manifest(obj), {"resourceVersion": version}
        )

    def put(self, request: Request, name: str, namespace: str | None = None) -> Response:
        context = self.authorize(request, "update", namespace, name)
        obj = store.replace(
            self.kind,
            namespace,
            name,
            self.body(request),
            subresource=self.subresource or None,
            context=context,
        )
        return Response(self.manifest(obj))

    def patch(self, request: Request, name: str, namespace: str | None = None) -> Response:
        content_type = (request.content_type or "").split(";")[0].strip().lower()
        force = request.query_params.get("force")
        server_side_apply.check_options(
            content_type, request.query_params.get("fieldManager"), force
        )
        if content_type == patches.APPLY_PATCH:
            return self.apply(request, name, namespace, force in ("true", "1"))
        patches.refuse_unserved(content_type, strategic=self.kind.strategic_merge is not None)
        context = self.authorize(request, "patch", namespace, name)
        obj = store.patch(
            self.kind,
            namespace,
            name,
            self.body(request),
            subresource=self.subresource or None,
            patch_type=content_type
            if content_type in (patches.JSON_PATCH, patches.STRATEGIC_MERGE_PATCH)
            else patches.MERGE_PATCH,
            context=context,
        )
        return Response(self.manifest(obj))

    def apply(self, request: Request, name: str, namespace: str | None, force: bool) -> Response:
        """Server-side apply: 201 when it created the object, 200 otherwise."""
        context = self.authorize(request, "patch", namespace, name)
        obj, created = store.apply(
            self.kind,
            namespace,
            name,
            self.body(request),
            subresource=self.subresource or None,
            force=force,
            context=context,
        )
        return Response(self.manifest(obj), status=201 if created else 200)

    def delete(self, request: Request, name: str, namespace: str | None = None) -> Response:
        if self.subresource:
            raise errors.method_not_allowed("DELETE is not allowed on a subresource")
        context = self.authorize(request, "delete", namespace, name)  # before the body, as kube
        options = self.delete_options(request)
        obj, gone = store.delete(
            self.kind,
            namespace,
            name,
            propagation=options.propagation,
            preconditions=options.preconditions,
            context=replace(context, dry_run=bool(options.dry_run)),
        )
        if not gone:
            return Response(self.manifest(obj))
        return Response(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": {
                    "name": name,
                    "group": self.kind.group,
                    "kind": self.kind.plural,
                    "uid": str(obj.uid),
                },
            }
        )


class ReviewView(KubeView):
    """POST on a create-only kind that is answered, never stored (an access review)."""

    review: ReviewKind = None  # type: ignore[assignment]
    http_method_names = ["post", "options"]

    def post(self, request: Request) -> Response:
        body = self.body(request)
        if isinstance(body, dict):
            for key, expected in (
                ("apiVersion", self.review.api_version),
                ("kind", self.review.kind),
            ):
                if body.get(key) not in (None, "", expected):
                    raise errors.bad_request(
                        f"{key} must be {expected}", [errors.invalid(key, f"must be {expected}")]
                    )
        return Response(self.review.answer(request.user, body), status=201)
