"""The kinds the API serves: one ``ResourceKind`` per Kubernetes kind, registered by its app."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .errors import FieldError
from .status_strategy import StatusStrategy
from .strategic_merge import Schema

if TYPE_CHECKING:
    from .serializers import BodySpec
    from .write_context import WriteContext


@dataclass(frozen=True)
class Column:
    """A printer column: shown by ``manage.py get``, the admin list and the Table view."""

    header: str
    value: Callable[[Any], Any]  # model instance -> printable value
    wide: bool = False  # only with ``-o wide`` (a Table column of priority 1)
    description: str = ""  # the Table's columnDefinitions[].description


# validate(new_manifest, old_manifest_or_None) -> causes; cross-field and immutability rules.
Validator = Callable[[dict[str, Any], dict[str, Any] | None], list[FieldError]]
# A ``ResourceKind.defaulting`` hook: (kind, manifest, namespace|None, context) -> causes.
# It may change the manifest's body fields in place (metadata is settled before it runs).
Defaulter = Callable[["ResourceKind", dict[str, Any], str | None, "WriteContext"], list[FieldError]]
# A ``ResourceKind.warnings`` hook: manifest -> warning texts about it (admission_warnings).
WarningCheck = Callable[[dict[str, Any]], list[str]]
# A ``ResourceKind.admission`` check: (kind, new, old|None, context), raising to refuse.
AdmissionCheck = Callable[
    ["ResourceKind", dict[str, Any], dict[str, Any] | None, "WriteContext"], None
]


# Discovery categories, which kubectl expands (``kubectl get all``, ``kubectl get kruntimes``):
# ``all`` holds what a user runs and watches (as kube's pods, deployments, jobs, cronjobs),
# not definitions, volumes or configuration; ``kruntimes`` every kind of kruntimes.io.
IN_ALL = ("all", "kruntimes")
KRUNTIMES = ("kruntimes",)


@dataclass
class ResourceKind:
    group: str  # "" is the core group (Namespace)
    version: str
    kind: str
    plural: str
    model: type[Any]  # the registered Django model (any ObjectMeta subclass)
    # Top-level body fields on the wire -> a DRF serializer class (object fields) or a field
    # instance such as ``RuleSerializer(many=True)`` validating that field.
    body: dict[str, BodySpec]
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    singular: str = ""
    # What the kind is, for its users: the schema's description, the first thing
    # ``kubectl explain <plural>`` prints (the model's docstring is for developers).
    description: str = ""
    # Body fields whose change bumps metadata.generation (Kubernetes: the spec).
    generation_fields: tuple[str, ...] = ("spec",)
    # The /status subresource, if any: its body field and the rules a status update keeps.
    status: StatusStrategy | None = StatusStrategy()
    columns: tuple[Column, ...] = ()
    validators: tuple[Validator, ...] = ()
    # Name syntax: DNS-1123 subdomain by default; a label for Namespaces.
    name_is_label: bool = False
    categories: tuple[str, ...] = ()
    # Names that may never be deleted (the ``default`` Namespace).
    protected_names: tuple[str, ...] = ()
    # Subresources served by the kind's own views (e.g. ``log``: verbs), listed in discovery.
    subresources: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Subresources served outside this API (a Run's ``invoke``, by the function gateway):
    # authorized like any other (RBAC or SubjectAccessReview) and granted by the default roles
    # whose verbs they name, never listed in discovery or OpenAPI (no API path serves them).
    authorized_subresources: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Finalizers every new object gets (what a mutating webhook would add in Kubernetes).
    default_finalizers: tuple[str, ...] = ()
    # more finalizers a new object gets by what it is (manifest -> finalizers), e.g. function Runs
    finalizers_for: Callable[[dict[str, Any]], tuple[str, ...]] | None = None
    # The kind's watchers: (object, event type) -> None, called for every change recorded
    # (``history.announce``: a store write, a status write, a batch), inside the writing
    # transaction; each marks work (a work queue key). Other apps add theirs with ``watch``.
    on_change: tuple[Callable[[Any, str], None], ...] = ()
    # Mutating admission on create: hooks filling body fields (e.g. a WorkflowRun's jobs from
    # its Workflow) after authorization and before validation; causes they return are a 422.
    defaulting: tuple[Defaulter, ...] = ()
    # Admission checks that need the writer: (kind, new, old|None, WriteContext) -> None,
    # raising a StatusError (e.g. RBAC escalation prevention). Run after validation.
    admission: tuple[AdmissionCheck, ...] = ()
    # Warnings about an admitted write (manifest -> texts): answered as ``Warning`` headers
    # and shown by the admin, the write goes ahead (``admission_warnings``).
    warnings: tuple[WarningCheck, ...] = ()
    # Finalizers the kind keeps beyond metadata.finalizers (a Namespace's spec.finalizers):
    # model instance -> names; a deleted object stays while any remain.
    extra_finalizers: Callable[[Any], list[str]] | None = None
    # The body's strategic merge patch strategies (the Go struct tags of a kind kubectl has
    # compiled in; ObjectMeta's are added): None refuses that patch type with kube-apiserver's
    # 415 for custom resources.
    strategic_merge: Schema | None = None
    # The validated body fields as stored, on every write before the validators run (a
    # Secret's write-only ``stringData`` folded into ``data``): (body, old|None) -> body.
    normalize: Callable[[dict[str, Any], Mapping[str, Any] | None], dict[str, Any]] | None = None
    # An item as a list shows it (a Secret's values only on a GET of that one Secret); also
    # what the watch history stores, so applying it twice must change nothing.
    in_list: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # Served from rows others keep (a provider's Runtime Pods): get, list and watch; every
    # write through the API or the store is refused.
    read_only: bool = False
    # (kind, model instance) -> manifest, for a model not stored as body JSON fields.
    to_manifest: Callable[[ResourceKind, Any], dict[str, Any]] | None = None
    # Its inverse: (kind, manifest) -> an unsaved instance the columns read (a watch event
    # shown as a Table row).
    from_manifest: Callable[[ResourceKind, Mapping[str, Any]], Any] | None = None
    # The model attribute holding metadata.creationTimestamp (what AGE counts from).
    created_attr: str = "creation_timestamp"
    # fieldSelector labels beyond metadata.name/metadata.namespace -> the (indexed) model
    # column holding that field (an Event's ``involvedObject.name`` -> ``involved_name``).
    field_selectors: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.singular = self.singular or self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def status_field(self) -> str | None:
        """The body field written only through the /status subresource, if any."""
        return self.status.field if self.status is not None else None

    def attr(self, wire_name: str) -> str:
        """The model attribute holding a wire body field (``roleRef`` -> ``role_ref``)."""
        return _snake_case(wire_name)

    def selectable_fields(self) -> dict[str, str]:
        """Every fieldSelector label this kind serves -> its model column."""
        found = {"metadata.name": "name"}
        if self.namespaced:
            found["metadata.namespace"] = "namespace"
        return {**found, **self.field_selectors}

    def names(self) -> set[str]:
        return {self.kind.lower(), self.plural, self.singular, *self.short_names}


@dataclass(frozen=True)
class ReviewKind:
    """A create-only, cluster-scoped kind that is answered and never stored (an access
    review): POST ``/apis/<group>/<version>/<plural>`` returns ``answer(user, body)``."""

    group: str
    version: str
    kind: str
    plural: str
    answer: Callable[[Any, Any], dict[str, Any]]
    # A review with nothing to ask but who asks (SelfSubjectReview) has no ``spec``.
    has_spec: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


@dataclass
class Registry:
    kinds: list[ResourceKind] = field(default_factory=list)
    reviews: list[ReviewKind] = field(default_factory=list)

    def register_review(self, review: ReviewKind) -> ReviewKind:
        if any(
            (r.group, r.version, r.plural) == (review.group, review.version, review.plural)
            for r in self.reviews
        ):
            raise ValueError(f"review {review.plural}.{review.group} registered twice")
        self.reviews.append(review)
        return review

    def group_versions(self) -> dict[str, set[str]]:
        """Every API group (named ones and the core "") with the versions served in it."""
        found: dict[str, set[str]] = {}
        pairs = [(k.group, k.version) for k in self.kinds]
        pairs += [(r.group, r.version) for r in self.reviews]
        for group, version in pairs:
            found.setdefault(group, set()).add(version)
        return found

    def register(self, kind: ResourceKind) -> ResourceKind:
        for existing in self.kinds:
            if (existing.group, existing.version, existing.plural) == (
                kind.group,
                kind.version,
                kind.plural,
            ):
                raise ValueError(f"kind {kind.key}/{kind.version} registered twice")
        self.kinds.append(kind)
        return kind

    def get(self, group: str, version: str, plural: str) -> ResourceKind | None:
        for kind in self.kinds:
            if (kind.group, kind.version, kind.plural) == (group, version, plural):
                return kind
        return None

    def for_manifest(self, api_version: str, kind_name: str) -> ResourceKind | None:
        for kind in self.kinds:
            if kind.api_version == api_version and kind.kind == kind_name:
                return kind
        return None

    def watch(self, model: type[Any], hook: Callable[[Any, str], None]) -> None:
        """Have ``hook`` see every change of ``model``'s kind (an app watching a kind it
        builds on, as a controller watches another's objects); once however often asked."""
        kind = self.for_model(model)
        if kind is None:
            raise LookupError(f"{model.__name__} is not a registered kind")
        if hook not in kind.on_change:
            kind.on_change = (*kind.on_change, hook)

    def for_model(self, model: type[Any]) -> ResourceKind | None:
        for kind in self.kinds:
            if kind.model is model:
                return kind
        return None

    def lookup(self, name: str) -> ResourceKind | None:
        """Resolve a CLI name: ``runs``, ``run``, ``rn``, ``Run``, ``runs.kruntimes.io``."""
        lowered = name.lower()
        resource, _, group = lowered.partition(".")
        for kind in self.kinds:
            if resource in kind.names() and (not group or kind.group == group):
                return kind
        return None

    def stored(self) -> list[ResourceKind]:
        """The kinds whose objects the store writes (garbage collection walks only these)."""
        return [kind for kind in self.kinds if not kind.read_only]

    def groups(self) -> dict[str, list[ResourceKind]]:
        by_group: dict[str, list[ResourceKind]] = {}
        for kind in self.kinds:
            by_group.setdefault(kind.group, []).append(kind)
        return by_group


registry = Registry()


@lru_cache(maxsize=1024)
def _snake_case(wire_name: str) -> str:
    # every manifest a watch event stores asks this of each body field: once per name
    return "".join("_" + c.lower() if c.isupper() else c for c in wire_name)
