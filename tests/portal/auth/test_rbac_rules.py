"""Kubernetes RBAC rule and subject matching, table-driven and without a database."""

from __future__ import annotations

import pytest

from portal.auth.authorizer import ResourceAttributes, UserInfo
from portal.auth.rbac import rule_allows, service_account_name, subject_matches

KR = "kruntimes.io"


def request(verb="get", group=KR, resource="runs", subresource="", name="", namespace="default"):
    return ResourceAttributes(
        verb=verb,
        group=group,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
        version="v1",
    )


def rule(verbs=("get",), groups=(KR,), resources=("runs",), names=None):
    built = {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources)}
    if names is not None:
        built["resourceNames"] = list(names)
    return built


RULE_CASES = [
    # verbs
    pytest.param(rule(verbs=["get"]), request(verb="get"), True, id="verb-exact"),
    pytest.param(rule(verbs=["get"]), request(verb="list"), False, id="verb-other"),
    pytest.param(rule(verbs=["list", "watch"]), request(verb="watch"), True, id="verb-any-of-list"),
    pytest.param(rule(verbs=["*"]), request(verb="deletecollection"), True, id="verb-wildcard"),
    pytest.param(rule(verbs=[]), request(verb="get"), False, id="verbs-empty"),
    pytest.param({"apiGroups": [KR], "resources": ["runs"]}, request(), False, id="verbs-missing"),
    pytest.param(rule(verbs=["GET"]), request(verb="get"), False, id="verb-case-sensitive"),
    # apiGroups
    pytest.param(rule(groups=[KR]), request(group=KR), True, id="group-exact"),
    pytest.param(rule(groups=[KR]), request(group="apps"), False, id="group-other"),
    pytest.param(rule(groups=["*"]), request(group="apps"), True, id="group-wildcard"),
    pytest.param(rule(groups=["*"]), request(group=""), True, id="group-wildcard-core"),
    pytest.param(rule(groups=[""]), request(group=""), True, id="group-core"),
    pytest.param(rule(groups=[""]), request(group=KR), False, id="group-core-not-named"),
    pytest.param(rule(groups=[KR]), request(group=""), False, id="group-named-not-core"),
    pytest.param(rule(groups=[]), request(), False, id="groups-empty"),
    pytest.param({"verbs": ["get"], "resources": ["runs"]}, request(), False, id="groups-missing"),
    # resources and subresources
    pytest.param(rule(resources=["runs"]), request(resource="runs"), True, id="resource-exact"),
    pytest.param(
        rule(resources=["runs"]), request(resource="runtimes"), False, id="resource-other"
    ),
    pytest.param(
        rule(resources=["run"]), request(resource="runs"), False, id="resource-no-prefix-match"
    ),
    pytest.param(
        rule(resources=["runs"]),
        request(resource="runs", subresource="status"),
        False,
        id="resource-not-its-subresource",
    ),
    pytest.param(
        rule(resources=["runs/status"]),
        request(resource="runs", subresource="status"),
        True,
        id="subresource-exact",
    ),
    pytest.param(
        rule(resources=["runs/status"]),
        request(resource="runs"),
        False,
        id="subresource-not-main-resource",
    ),
    pytest.param(
        rule(resources=["runs/status"]),
        request(resource="runs", subresource="log"),
        False,
        id="subresource-other",
    ),
    pytest.param(rule(resources=["*"]), request(resource="anything"), True, id="resource-wildcard"),
    pytest.param(
        rule(resources=["*"]),
        request(resource="runs", subresource="status"),
        True,
        id="resource-wildcard-includes-subresources",
    ),
    pytest.param(
        rule(resources=["*/status"]),
        request(resource="runs", subresource="status"),
        True,
        id="any-status",
    ),
    pytest.param(
        rule(resources=["*/status"]),
        request(resource="widgets", subresource="status"),
        True,
        id="any-status-other-kind",
    ),
    pytest.param(
        rule(resources=["*/status"]),
        request(resource="runs"),
        False,
        id="any-status-not-main-resource",
    ),
    pytest.param(
        rule(resources=["*/status"]),
        request(resource="runs", subresource="log"),
        False,
        id="any-status-not-other-subresource",
    ),
    pytest.param(
        rule(resources=["*/stat"]),
        request(resource="runs", subresource="status"),
        False,
        id="any-subresource-needs-whole-name",
    ),
    pytest.param(
        rule(resources=["runs/*"]),
        request(resource="runs", subresource="status"),
        False,
        id="resource-slash-star-is-not-a-pattern",
    ),
    pytest.param(
        rule(verbs=["use"], resources=["persistentworkspaces/use"]),
        request(verb="use", resource="persistentworkspaces", subresource="use"),
        True,
        id="workspace-use",
    ),
    pytest.param(
        rule(verbs=["use"], resources=["persistentworkspaces"]),
        request(verb="use", resource="persistentworkspaces", subresource="use"),
        False,
        id="workspace-use-not-granted-by-resource",
    ),
    pytest.param(
        rule(verbs=["*"], resources=["persistentworkspaces/use"]),
        request(verb="get", resource="persistentworkspaces"),
        False,
        id="workspace-use-grants-not-the-workspace",
    ),
    pytest.param(rule(resources=[]), request(), False, id="resources-empty"),
    pytest.param(
        {"verbs": ["get"], "apiGroups": [KR], "nonResourceURLs": ["/healthz"]},
        request(),
        False,
        id="non-resource-rule",
    ),
    # resourceNames
    pytest.param(rule(names=[]), request(name=""), True, id="names-empty-allows-collection"),
    pytest.param(rule(names=[]), request(name="r1"), True, id="names-empty-allows-any-name"),
    pytest.param(rule(names=["r1"]), request(name="r1"), True, id="names-listed"),
    pytest.param(rule(names=["r1", "r2"]), request(name="r2"), True, id="names-any-listed"),
    pytest.param(rule(names=["r1"]), request(name="r3"), False, id="names-unlisted"),
    pytest.param(
        rule(verbs=["list"], names=["r1"]),
        request(verb="list", name=""),
        False,
        id="names-deny-list",
    ),
    pytest.param(
        rule(verbs=["create"], names=["r1"]),
        request(verb="create", name=""),
        False,
        id="names-deny-create-without-name",
    ),
    pytest.param(
        rule(verbs=["create"], names=["r1"]),
        request(verb="create", name="r1"),
        True,
        id="names-allow-create-with-name",
    ),
    # everything at once
    pytest.param(
        rule(verbs=["*"], groups=["*"], resources=["*"]),
        request(verb="delete", group="", resource="namespaces", name="x"),
        True,
        id="cluster-admin",
    ),
]


@pytest.mark.parametrize(("rule", "attrs", "allowed"), RULE_CASES)
def test_rule_allows(rule, attrs, allowed):
    assert rule_allows(rule, attrs) is allowed


ALICE = UserInfo(username="alice", uid="1", groups=("devs", "system:authenticated"))
BOT = UserInfo(username="system:serviceaccount:ci:builder", groups=("system:serviceaccounts",))

SUBJECT_CASES = [
    pytest.param({"kind": "User", "name": "alice"}, ALICE, "", True, id="user"),
    pytest.param({"kind": "User", "name": "bob"}, ALICE, "", False, id="user-other"),
    pytest.param({"kind": "User", "name": "Alice"}, ALICE, "", False, id="user-case-sensitive"),
    pytest.param({"kind": "User", "name": "devs"}, ALICE, "", False, id="user-is-not-group"),
    pytest.param({"kind": "Group", "name": "devs"}, ALICE, "", True, id="group"),
    pytest.param(
        {"kind": "Group", "name": "system:authenticated"}, ALICE, "", True, id="group-authenticated"
    ),
    pytest.param({"kind": "Group", "name": "ops"}, ALICE, "", False, id="group-other"),
    pytest.param({"kind": "Group", "name": "alice"}, ALICE, "", False, id="group-is-not-user"),
    pytest.param(
        {"kind": "ServiceAccount", "name": "builder", "namespace": "ci"},
        BOT,
        "",
        True,
        id="serviceaccount",
    ),
    pytest.param(
        {"kind": "ServiceAccount", "name": "builder", "namespace": "ci"},
        BOT,
        "other",
        True,
        id="serviceaccount-explicit-namespace-wins",
    ),
    pytest.param(
        {"kind": "ServiceAccount", "name": "builder", "namespace": "prod"},
        BOT,
        "ci",
        False,
        id="serviceaccount-other-namespace",
    ),
    pytest.param(
        {"kind": "ServiceAccount", "name": "deployer", "namespace": "ci"},
        BOT,
        "",
        False,
        id="serviceaccount-other-name",
    ),
    pytest.param(
        {"kind": "ServiceAccount", "name": "builder"},
        BOT,
        "ci",
        True,
        id="serviceaccount-defaults-to-binding-namespace",
    ),
    pytest.param(
        {"kind": "ServiceAccount", "name": "builder", "namespace": ""},
        BOT,
        "ci",
        True,
        id="serviceaccount-empty-namespace-defaults",
    ),
    pytest.param(
        {"kind": "ServiceAccount", "name": "builder"},
        BOT,
        "",
        False,
        id="serviceaccount-without-any-namespace",
    ),
    pytest.param(
        {"kind": "ServiceAccount", "name": "builder"},
        UserInfo(username="system:serviceaccount::builder"),
        "",
        False,
        id="serviceaccount-without-namespace-is-not-empty-namespace",
    ),
    pytest.param(
        {"kind": "ServiceAccount", "name": "builder", "namespace": "ci"},
        UserInfo(username="builder"),
        "ci",
        False,
        id="serviceaccount-is-not-plain-user",
    ),
    pytest.param(
        {"kind": "User", "name": "system:serviceaccount:ci:builder"},
        BOT,
        "",
        True,
        id="user-naming-serviceaccount",
    ),
    pytest.param({"kind": "Robot", "name": "alice"}, ALICE, "", False, id="unknown-kind"),
    pytest.param(
        {"kind": "User", "name": ""},
        UserInfo(username=""),
        "",
        False,
        id="nameless-subject-names-nobody",
    ),
]


@pytest.mark.parametrize(("subject", "user", "binding_namespace", "matches"), SUBJECT_CASES)
def test_subject_matches(subject, user, binding_namespace, matches):
    assert subject_matches(subject, user, binding_namespace) is matches


@pytest.mark.parametrize(
    ("username", "name"),
    [
        pytest.param("system:serviceaccount:ci:builder", "builder", id="serviceaccount"),
        pytest.param("alice", "", id="user"),
        pytest.param("system:serviceaccount:ci", "", id="no-name"),
        pytest.param("system:serviceaccount::builder", "", id="no-namespace"),
        pytest.param("system:serviceaccount:ci:a:b", "", id="extra-colon"),
    ],
)
def test_service_account_name(username, name):
    assert service_account_name(username) == name
