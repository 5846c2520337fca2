"""The identities the portal itself writes with, and the policy built in for them.

- ``LOCAL_OPERATOR`` (``system:admin`` in ``system:masters``): who the management commands
  write as unless ``--as USER`` says otherwise. ``system:masters`` is the privileged group, as
  in the Kubernetes API server: it is allowed everything (cluster-admin), under either
  authorizer. Anyone with shell access to the portal's database is such an operator anyway.
- controllers (``system:kruntimes:<name>``, group ``system:kruntimes:controllers``): each
  background controller writes as itself, allowed only the rules it registered
  (``register_controller``), never as a superuser. The rules are built in, not stored, so the
  portal's own controllers work the same whichever authorizer serves users.
"""

from __future__ import annotations

from dataclasses import dataclass

from .attributes import Decision, ResourceAttributes, UserInfo

PRIVILEGED_GROUP = "system:masters"
AUTHENTICATED = "system:authenticated"
CONTROLLERS_GROUP = "system:kruntimes:controllers"
CONTROLLER_PREFIX = "system:kruntimes:"

LOCAL_OPERATOR = UserInfo(username="system:admin", groups=(PRIVILEGED_GROUP, AUTHENTICATED))


@dataclass(frozen=True)
class Controller:
    name: str
    rules: tuple[dict, ...]

    @property
    def user(self) -> UserInfo:
        return UserInfo(
            username=f"{CONTROLLER_PREFIX}{self.name}", groups=(CONTROLLERS_GROUP, AUTHENTICATED)
        )


_controllers: dict[str, Controller] = {}


def register_controller(name: str, rules: list[dict]) -> UserInfo:
    """Declare a controller and what it may do (PolicyRules); returns the identity it writes
    with. Registering the same name again replaces its rules (an app reloaded in tests)."""
    controller = Controller(name, tuple(rules))
    _controllers[controller.user.username] = controller
    return controller.user


def controller(name: str) -> UserInfo:
    """The identity of a registered controller (KeyError for an unknown one: a typo)."""
    username = f"{CONTROLLER_PREFIX}{name}"
    return _controllers[username].user


def controllers() -> list[Controller]:
    return sorted(_controllers.values(), key=lambda c: c.name)


def system_decision(user: UserInfo, attributes: ResourceAttributes) -> Decision | None:
    """The built-in policy: a decision for the privileged group and for controllers, None for
    everyone else (the configured authorizer decides)."""
    from .rbac import rules_allow

    if PRIVILEGED_GROUP in user.groups:
        return Decision(True, f'member of the privileged group "{PRIVILEGED_GROUP}"')
    found = _controllers.get(user.username)
    if found is None or CONTROLLERS_GROUP not in user.groups:
        return None
    if rules_allow(list(found.rules), attributes):
        return Decision(True, f'built-in policy of controller "{found.name}"')
    return Decision(False, f'not in the built-in policy of controller "{found.name}"')


def system_rules(user: UserInfo) -> list[dict] | None:
    """A registered controller's built-in rules; None for everyone else."""
    found = _controllers.get(user.username)
    if found is None or CONTROLLERS_GROUP not in user.groups:
        return None
    return list(found.rules)
