"""meta/v1 DeleteOptions as kube-apiserver reads them (``handlers/delete.go``): from the body
when there is one (the query string is then not read at all), else from the query string;
then ``ValidateDeleteOptions``. kubectl and client-go send them in the body, so a server that
read only the query would really delete on ``kubectl delete --dry-run=server``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import errors

KIND = "DeleteOptions"
POLICIES = ("Foreground", "Background", "Orphan")
# DeleteOptions is decoded in any version of the meta scheme; clients of a group send that
# group's version ("per group DeleteOptions", kept for backwards compatibility).
META_VERSIONS = ("v1", "meta.k8s.io/v1", "meta.k8s.io/v1beta1")
FIELDS = frozenset(
    {
        "kind",
        "apiVersion",
        "dryRun",
        "gracePeriodSeconds",
        "preconditions",
        "propagationPolicy",
        "orphanDependents",
        "ignoreStoreReadErrorWithClusterBreakingPotential",
    }
)


@dataclass(frozen=True)
class DeleteOptions:
    dry_run: list[str] = field(default_factory=list)
    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    preconditions: dict[str, str] = field(default_factory=dict)

    @property
    def propagation(self) -> str:
        """The policy to apply: orphanDependents (deprecated) maps onto it; Background by default."""
        if self.propagation_policy:
            return self.propagation_policy
        if self.orphan_dependents is not None:
            return "Orphan" if self.orphan_dependents else "Background"
        return "Background"


def _bad(path: str, message: str) -> errors.StatusError:
    return errors.bad_request(f"{path}: {message}", [errors.invalid(path, message)])


def _string_list(value: Any, path: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(path, "must be an array of strings")
    return list(value)


def _integer(value: Any, path: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(path, "must be an integer")
    return int(value)


def _boolean(value: Any, path: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise _bad(path, "must be a boolean")
    return value


def _preconditions(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad("preconditions", "must be an object")
    for key in sorted(set(value) - {"uid", "resourceVersion"}):
        raise _bad(f"preconditions.{key}", f'unknown field "{key}"')
    found: dict[str, str] = {}
    for key in ("uid", "resourceVersion"):
        if value.get(key) is None:
            continue
        if not isinstance(value[key], str):
            raise _bad(f"preconditions.{key}", "must be a string")
        found[key] = value[key]
    return found


def from_body(body: Any, own_api_version: str) -> DeleteOptions:
    """Options from a request body; 400 naming the field when it is no DeleteOptions."""
    if not isinstance(body, dict):
        raise errors.bad_request(
            "the body of a delete must be a DeleteOptions object",
            [errors.invalid("", "must be a DeleteOptions object")],
        )
    kind, version = body.get("kind"), body.get("apiVersion")
    if kind not in (None, "", KIND):
        raise _bad("kind", f'must be {KIND}, not "{kind}"')
    if version not in (None, "", *META_VERSIONS, own_api_version):
        accepted = ", ".join((*META_VERSIONS, own_api_version))
        raise _bad("apiVersion", f'"{version}" is not a version of {KIND} ({accepted})')
    for key in sorted(set(body) - FIELDS):
        raise _bad(key, f'unknown field "{key}"')
    policy = body.get("propagationPolicy")
    if policy is not None and not isinstance(policy, str):
        raise _bad("propagationPolicy", "must be a string")
    return DeleteOptions(
        dry_run=_string_list(body.get("dryRun"), "dryRun"),
        grace_period_seconds=_integer(body.get("gracePeriodSeconds"), "gracePeriodSeconds"),
        propagation_policy=policy,
        orphan_dependents=_boolean(body.get("orphanDependents"), "orphanDependents"),
        preconditions=_preconditions(body.get("preconditions")),
    )


def from_query(query: Any) -> DeleteOptions:
    """Options from the query string (``dryRun`` may repeat); 400 for a malformed value."""
    grace = query.get("gracePeriodSeconds")
    if grace not in (None, ""):
        try:
            grace = int(grace)
        except ValueError:
            raise _bad("gracePeriodSeconds", f'"{grace}" is not an integer') from None
    orphan = query.get("orphanDependents")
    if orphan not in (None, ""):
        if orphan not in ("true", "false"):
            raise _bad("orphanDependents", f'"{orphan}" is not a boolean')
        orphan = orphan == "true"
    return DeleteOptions(
        dry_run=[v for v in query.getlist("dryRun") if v != ""],
        grace_period_seconds=grace if grace != "" else None,
        propagation_policy=query.get("propagationPolicy") or None,
        orphan_dependents=orphan if orphan != "" else None,
    )


def validate(options: DeleteOptions) -> DeleteOptions:
    """``ValidateDeleteOptions``: 422 ``DeleteOptions.meta.k8s.io "" is invalid``."""
    causes: list[errors.FieldError] = []
    if options.orphan_dependents is not None and options.propagation_policy is not None:
        causes.append(
            errors.invalid(
                "propagationPolicy", "orphanDependents and deletionPropagation cannot be both set"
            )
        )
    if options.propagation_policy is not None and options.propagation_policy not in POLICIES:
        causes.append(
            errors.not_supported(
                "propagationPolicy", options.propagation_policy, [*POLICIES, "nil"]
            )
        )
    for value in options.dry_run:
        if value != "All":
            causes.append(errors.not_supported("dryRun", value, ["All"]))
    if causes:
        raise errors.invalid_object(KIND, "meta.k8s.io", "", causes)
    return options


def read(
    body_present: bool, body: Any, query: Mapping[str, Any], own_api_version: str
) -> DeleteOptions:
    """The request's DeleteOptions, as ``DeleteResource`` and ``DeleteCollection`` read them."""
    options = from_body(body, own_api_version) if body_present else from_query(query)
    return validate(options)
