"""The terms of an authorization question and its answer: who asks (UserInfo), about what
(ResourceAttributes, NonResourceAttributes), and what is decided (Decision, RuleList). The
authorizer, the built-in identities and RBAC all speak them, so they import this, not each
other."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class UserInfo:
    """The subject as Kubernetes sees it (authentication.k8s.io/v1 UserInfo)."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict, hash=False, compare=False)
    is_superuser: bool = False

    @classmethod
    def of(cls, user) -> UserInfo:
        """A UserInfo as it is, the one a cluster-authenticated user carries
        (``tokenreview.ClusterUser.user_info``), or the one of a Django user."""
        if isinstance(user, UserInfo):
            return user
        carried = getattr(user, "user_info", None)
        return carried if isinstance(carried, UserInfo) else cls.from_django(user)

    @classmethod
    def from_django(cls, user) -> UserInfo:
        if user is None or not getattr(user, "is_authenticated", False):
            return cls(username="system:anonymous", groups=("system:unauthenticated",))
        # "system:" names are reserved for the identities the portal makes itself
        # (portal.auth.identities): a Django group cannot confer them.
        names = sorted(g.name for g in user.groups.all() if not g.name.startswith("system:"))
        groups = (*names, "system:authenticated")
        return cls(
            username=user.get_username(),
            uid=str(user.pk),
            groups=groups,
            is_superuser=bool(user.is_superuser),
        )


@dataclass(frozen=True)
class ResourceAttributes:
    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    version: str = ""


@dataclass(frozen=True)
class NonResourceAttributes:
    verb: str
    path: str


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""
    denied: bool = False  # an explicit deny (not merely no rule allowing it)


@dataclass(frozen=True)
class RuleList:
    """What a user may do, as a SelfSubjectRulesReview tells it: PolicyRule-shaped dicts;
    ``incomplete`` when the backend could not list them all (and why)."""

    resource_rules: tuple[dict, ...] = ()
    non_resource_rules: tuple[dict, ...] = ()
    incomplete: bool = False
    evaluation_error: str = ""
