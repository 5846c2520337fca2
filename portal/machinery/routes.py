"""URL patterns, discovery documents and OpenAPI wiring for every registered kind."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from django.http import HttpRequest
from django.urls import URLPattern, path, re_path
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from . import errors
from .registry import ResourceKind, ReviewKind, registry
from .serializers import ObjectMetaSerializer, StrictSerializer, fresh_field
from .views import CollectionView, KubeView, ObjectView, ReviewView

VERBS_COLLECTION = ["create", "delete", "deletecollection", "get", "list", "patch", "update"]
VERBS_READ = ["get", "list"]


class StatusSerializer(serializers.Serializer[Any]):
    kind = serializers.CharField(default="Status")
    apiVersion = serializers.CharField(default="v1")
    status = serializers.CharField()
    message = serializers.CharField()
    reason = serializers.CharField()
    code = serializers.IntegerField()
    details = serializers.DictField(required=False)


def manifest_serializer(kind: ResourceKind) -> type[serializers.Serializer[Any]]:
    fields: dict[str, serializers.Field[Any, Any, Any, Any]] = {
        "apiVersion": serializers.CharField(default=kind.api_version),
        "kind": serializers.CharField(default=kind.kind),
        "metadata": ObjectMetaSerializer(),
    }
    for wire, spec in kind.body.items():
        fields[wire] = fresh_field(spec)
    return type(f"{kind.kind}Manifest", (StrictSerializer,), fields)


def list_serializer(
    kind: ResourceKind, item: type[serializers.Serializer[Any]]
) -> type[serializers.Serializer[Any]]:
    return type(
        f"{kind.kind}List",
        (serializers.Serializer,),
        {
            "apiVersion": serializers.CharField(),
            "kind": serializers.CharField(),
            "metadata": serializers.DictField(),
            "items": item(many=True),
        },
    )


LIST_PARAMETERS = [
    OpenApiParameter("labelSelector", str, description="Kubernetes label selector"),
    OpenApiParameter("fieldSelector", str, description="metadata.name / metadata.namespace"),
    OpenApiParameter("limit", int),
    OpenApiParameter("continue", str),
]
WRITE_PARAMETERS = [OpenApiParameter("dryRun", str, enum=["All"])]
DELETE_PARAMETERS = [
    *WRITE_PARAMETERS,
    OpenApiParameter("propagationPolicy", str, enum=["Background", "Foreground", "Orphan"]),
    OpenApiParameter("gracePeriodSeconds", int),
    OpenApiParameter("orphanDependents", bool),
]


class PreconditionsSerializer(serializers.Serializer[Any]):
    uid = serializers.CharField(required=False)
    resourceVersion = serializers.CharField(required=False)


class DeleteOptionsSerializer(serializers.Serializer[Any]):
    """meta/v1 DeleteOptions, the body of a delete (``portal.machinery.delete_options``)."""

    apiVersion = serializers.CharField(required=False)
    kind = serializers.CharField(required=False)
    dryRun = serializers.ListField(child=serializers.ChoiceField(["All"]), required=False)
    gracePeriodSeconds = serializers.IntegerField(required=False)
    propagationPolicy = serializers.ChoiceField(
        ["Background", "Foreground", "Orphan"], required=False
    )
    orphanDependents = serializers.BooleanField(required=False)
    preconditions = PreconditionsSerializer(required=False)


ERRORS = {code: StatusSerializer for code in (400, 401, 403, 404, 409, 422)}


def _views(
    kind: ResourceKind,
) -> tuple[
    type[CollectionView], type[ObjectView], type[ObjectView] | None, type[CollectionView] | None
]:
    item = manifest_serializer(kind)
    listing = list_serializer(kind, item)
    tag = [kind.api_version]
    collection = extend_schema_view(
        get=extend_schema(
            operation_id=f"list{kind.kind}",
            responses={200: listing, **ERRORS},
            parameters=LIST_PARAMETERS,
            tags=tag,
        ),
        post=extend_schema(
            operation_id=f"create{kind.kind}",
            request=item,
            responses={201: item, **ERRORS},
            parameters=WRITE_PARAMETERS,
            tags=tag,
        ),
        delete=extend_schema(
            operation_id=f"deletecollection{kind.kind}",
            request=DeleteOptionsSerializer,
            parameters=LIST_PARAMETERS[:2] + DELETE_PARAMETERS,
            responses={200: listing, **ERRORS},
            tags=tag,
        ),
    )(type(f"{kind.kind}CollectionView", (CollectionView,), {"kind": kind}))
    obj = extend_schema_view(
        get=extend_schema(
            operation_id=f"read{kind.kind}", responses={200: item, **ERRORS}, tags=tag
        ),
        put=extend_schema(
            operation_id=f"replace{kind.kind}",
            request=item,
            responses={200: item, **ERRORS},
            parameters=WRITE_PARAMETERS,
            tags=tag,
        ),
        patch=extend_schema(
            operation_id=f"patch{kind.kind}",
            request=item,
            responses={200: item, **ERRORS},
            parameters=WRITE_PARAMETERS,
            tags=tag,
        ),
        delete=extend_schema(
            operation_id=f"delete{kind.kind}",
            request=DeleteOptionsSerializer,
            parameters=DELETE_PARAMETERS,
            responses={200: item, **ERRORS},
            tags=tag,
        ),
    )(type(f"{kind.kind}View", (ObjectView,), {"kind": kind}))
    status = None
    if kind.status_field:
        status = extend_schema_view(
            get=extend_schema(
                operation_id=f"read{kind.kind}Status", responses={200: item}, tags=tag
            ),
            put=extend_schema(
                operation_id=f"replace{kind.kind}Status",
                request=item,
                responses={200: item, **ERRORS},
                tags=tag,
            ),
            patch=extend_schema(
                operation_id=f"patch{kind.kind}Status",
                request=item,
                responses={200: item, **ERRORS},
                tags=tag,
            ),
        )(
            type(
                f"{kind.kind}StatusView",
                (ObjectView,),
                {
                    "kind": kind,
                    "subresource": "status",
                    "http_method_names": ["get", "put", "patch", "options"],
                },
            )
        )
    everywhere = None
    if kind.namespaced:
        everywhere = extend_schema_view(
            get=extend_schema(
                operation_id=f"list{kind.kind}ForAllNamespaces",
                responses={200: listing, **ERRORS},
                parameters=LIST_PARAMETERS,
                tags=tag,
            ),
        )(
            type(
                f"{kind.kind}AllNamespacesView",
                (CollectionView,),
                {"kind": kind, "http_method_names": ["get", "options"]},
            )
        )
    return collection, obj, status, everywhere


def kind_urlpatterns(kind: ResourceKind) -> list[URLPattern]:
    base = f"apis/{kind.group}/{kind.version}" if kind.group else f"api/{kind.version}"
    collection, obj, status, everywhere = _views(kind)
    scoped = (
        f"{base}/namespaces/<str:namespace>/{kind.plural}"
        if kind.namespaced
        else f"{base}/{kind.plural}"
    )
    patterns = [
        path(scoped, collection.as_view()),
        path(f"{scoped}/<str:name>", obj.as_view()),
    ]
    if status is not None:
        patterns.append(path(f"{scoped}/<str:name>/status", status.as_view()))
    if everywhere is not None:
        patterns.append(path(f"{base}/{kind.plural}", everywhere.as_view()))
    return patterns


class APIResource(TypedDict):
    """metav1.APIResource: one resource (or subresource) in a discovery document."""

    name: str
    singularName: str
    namespaced: bool
    kind: str
    verbs: list[str]
    shortNames: NotRequired[list[str]]
    categories: NotRequired[list[str]]


class APIResourceList(TypedDict):
    kind: str
    apiVersion: str
    groupVersion: str
    resources: list[APIResource]


def resource_list(group: str, version: str) -> APIResourceList:
    resources: list[APIResource] = []
    for kind in registry.kinds:
        if (kind.group, kind.version) != (group, version):
            continue
        resources.append(
            {
                "name": kind.plural,
                "singularName": kind.singular,
                "namespaced": kind.namespaced,
                "kind": kind.kind,
                "verbs": VERBS_READ if kind.read_only else VERBS_COLLECTION,
                "shortNames": list(kind.short_names),
                "categories": list(kind.categories),
            }
        )
        if kind.status_field:
            resources.append(
                {
                    "name": f"{kind.plural}/status",
                    "singularName": "",
                    "namespaced": kind.namespaced,
                    "kind": kind.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        for name, verbs in sorted(kind.subresources.items()):
            resources.append(
                {
                    "name": f"{kind.plural}/{name}",
                    "singularName": "",
                    "namespaced": kind.namespaced,
                    "kind": kind.kind,
                    "verbs": list(verbs),
                }
            )
    for review in registry.reviews:
        if (review.group, review.version) == (group, version):
            resources.append(
                {
                    "name": review.plural,
                    "singularName": review.kind.lower(),
                    "namespaced": False,
                    "kind": review.kind,
                    "verbs": ["create"],
                }
            )
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


FREEFORM = {200: {"type": "object", "additionalProperties": True}}


class APIGroupListView(KubeView):
    @extend_schema(operation_id="getAPIGroups", responses=FREEFORM, tags=["discovery"])
    def get(self, request: Request) -> Response:
        groups = []
        for group, served in sorted(registry.group_versions().items()):
            if not group:
                continue
            versions = sorted(served)
            entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
            groups.append({"name": group, "versions": entries, "preferredVersion": entries[0]})
        return Response({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})


class APIVersionsView(KubeView):
    @extend_schema(operation_id="getCoreAPIVersions", responses=FREEFORM, tags=["discovery"])
    def get(self, request: Request) -> Response:
        return Response({"kind": "APIVersions", "versions": ["v1"]})


class APIResourceListView(KubeView):
    @extend_schema(responses=FREEFORM, tags=["discovery"])
    def get(self, request: Request, group: str = "", version: str = "v1") -> Response:
        document = resource_list(group, version)
        if not document["resources"]:
            raise errors.StatusError(
                404,
                "NotFound",
                f"the server could not find the requested resource ({group}/{version})",
            )
        return Response(document)


class NotFoundView(KubeView):
    """Anything else under /api or /apis: a Status, never Django's HTML 404."""

    schema = None
    http_method_names = ["get", "post", "put", "patch", "delete", "head", "options"]

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Response:
        self.args, self.kwargs, self.request = args, kwargs, self.initialize_request(request)
        self.headers = self.default_response_headers
        try:
            self.initial(self.request, *args, **kwargs)
            raise errors.StatusError(
                404, "NotFound", "the server could not find the requested resource"
            )
        except Exception as exc:  # noqa: BLE001 - rendered as Status
            response = self.handle_exception(exc)
        self.response = self.finalize_response(self.request, response, *args, **kwargs)
        return self.response


def review_serializer(review: ReviewKind) -> type[serializers.Serializer[Any]]:
    fields: dict[str, Any] = {
        "apiVersion": serializers.CharField(default=review.api_version),
        "kind": serializers.CharField(default=review.kind),
        "metadata": serializers.DictField(required=False),
        "status": serializers.DictField(read_only=True),
    }
    if review.has_spec:
        fields["spec"] = serializers.DictField()
    return type(review.kind, (serializers.Serializer,), fields)


def review_urlpattern(review: ReviewKind) -> URLPattern:
    body = review_serializer(review)
    view: type[ReviewView] = extend_schema_view(
        post=extend_schema(
            operation_id=f"create{review.kind}",
            request=body,
            responses={201: body, **ERRORS},
            tags=[review.api_version],
        )
    )(type(f"{review.kind}View", (ReviewView,), {"review": review}))
    return path(f"apis/{review.group}/{review.version}/{review.plural}", view.as_view())


def api_urlpatterns() -> list[URLPattern]:
    patterns = [
        re_path(r"^apis/?$", APIGroupListView.as_view()),
        path("api", APIVersionsView.as_view()),
        path("api/v1", APIResourceListView.as_view(), {"group": "", "version": "v1"}),
    ]
    for kind in registry.kinds:
        patterns += kind_urlpatterns(kind)
    for review in registry.reviews:
        patterns.append(review_urlpattern(review))
    for group, served in registry.group_versions().items():
        for version in sorted(served):
            if group:
                patterns.append(
                    path(
                        f"apis/{group}/{version}",
                        APIResourceListView.as_view(),
                        {"group": group, "version": version},
                    )
                )
    return patterns


def api_not_found_patterns() -> list[URLPattern]:
    return [re_path(r"^apis?(/.*)?$", NotFoundView.as_view())]
