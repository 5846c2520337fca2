"""The admin console of the portal's own kinds: Namespace and the RBAC kinds (Secret and
ConfigMap in ``portal.config_admin``).

Every page comes from ``ResourceAdmin`` (``portal/resource_admin/``); the extras here are the
RBAC tables an operator reads (rules, roleRef, subjects, who binds a role) and a Namespace's
contents. DRF's Token admin stays as ``rest_framework.authtoken`` registers it.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import admin
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

import portal.config_admin  # noqa: F401 - registers the Secret and ConfigMap admins
import portal.workqueue_admin  # noqa: F401 - registers the work queues' page
from portal import overview
from portal.machinery.registry import registry
from portal.models import ClusterRole, ClusterRoleBinding, Event, Namespace, Role, RoleBinding
from portal.resource_admin import (
    ResourceAdmin,
    code_list,
    compact,
    find_object,
    link_to,
    simple_table,
)

# the index's sections (portal.overview): Namespaces and RBAC are access, the config kinds
# definitions; Users, Groups and Tokens stay in the collapsed System section
for _order, _model in enumerate(
    (
        "portal.namespace",
        "portal.role",
        "portal.rolebinding",
        "portal.clusterrole",
        "portal.clusterrolebinding",
    )
):
    overview.place("access", _model, order=_order)
overview.place("definitions", "portal.secret", order=50)
overview.place("definitions", "portal.configmap", order=51)


@admin.register(Event)
class EventAdmin(ResourceAdmin):
    """Events, newest first; each names the object it is about (its own page lists them)."""

    show_events = False
    ordering = ("-last_seen",)


@admin.register(Namespace)
class NamespaceAdmin(ResourceAdmin):
    delete_action_label = "Delete namespace"
    detail_fieldsets = [("Contents", {"fields": ["contents_display"]})]

    def force_finalize_patch(self, obj) -> dict:
        # A Namespace is also held by spec.finalizers ("kubernetes") until its content is gone.
        return {"metadata": {"finalizers": None}, "spec": {"finalizers": []}}

    @admin.display(description="objects")
    def contents_display(self, obj):
        rows = []
        for kind in registry.kinds:
            if not kind.namespaced:
                continue
            count = kind.model.objects.filter(namespace=obj.name).count()
            if not count:
                continue
            opts = kind.model._meta
            text = f"{count} {kind.plural}"
            cell = text
            if self.admin_site.is_registered(kind.model):
                try:
                    url = reverse(
                        f"{self.admin_site.name}:{opts.app_label}_{opts.model_name}_changelist"
                    )
                    cell = format_html(
                        '<a href="{}?{}">{}</a>', url, urlencode({"namespace": obj.name}), text
                    )
                except NoReverseMatch:
                    pass
            rows.append((kind.kind, kind.api_version, cell))
        if not rows:
            return "empty"
        return simple_table(("kind", "apiVersion", "objects"), rows)


def rules_table(rules) -> str:
    if not isinstance(rules, list) or not rules:
        return compact(rules) if rules else "no rules"
    rows = []
    for rule in rules:
        if not isinstance(rule, dict):
            rows.append((compact(rule), "", "", "", ""))
            continue
        rows.append(
            (
                code_list(rule.get("apiGroups")),
                code_list(rule.get("resources")),
                code_list(rule.get("verbs")),
                code_list(rule.get("resourceNames")),
                code_list(rule.get("nonResourceURLs")),
            )
        )
    return simple_table(
        ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"), rows
    )


class RoleAdminBase(ResourceAdmin):
    detail_fieldsets = [
        ("Rules", {"fields": ["rules_display"]}),
        ("Bound by", {"fields": ["bindings_display"]}),
    ]

    @admin.display(description="rules")
    def rules_display(self, obj):
        return rules_table(obj.rules)

    def bindings(self, obj):
        kind_name = registry.for_model(type(obj)).kind
        found = list(RoleBinding.objects.filter(role_ref__kind=kind_name, role_ref__name=obj.name))
        if kind_name == "Role":
            found = [b for b in found if b.namespace == obj.namespace]
        else:
            found += list(
                ClusterRoleBinding.objects.filter(role_ref__kind=kind_name, role_ref__name=obj.name)
            )
        return found

    @admin.display(description="bindings")
    def bindings_display(self, obj):
        rows = [
            (
                registry.for_model(type(b)).kind,
                link_to(b, str(b), self.admin_site),
                subjects_summary(b.subjects),
            )
            for b in self.bindings(obj)
        ]
        if not rows:
            return "not bound"
        return simple_table(("kind", "binding", "subjects"), rows)


@admin.register(Role)
class RoleAdmin(RoleAdminBase):
    pass


@admin.register(ClusterRole)
class ClusterRoleAdmin(RoleAdminBase):
    pass


def subjects_summary(subjects) -> str:
    if not isinstance(subjects, list):
        return compact(subjects)
    parts = []
    for subject in subjects:
        if isinstance(subject, dict):
            name = compact(subject.get("name"))
            if subject.get("namespace"):
                name = f"{subject['namespace']}/{name}"
            parts.append(f"{compact(subject.get('kind'))}:{name}")
        else:
            parts.append(compact(subject))
    return ", ".join(parts)


class BindingAdminBase(ResourceAdmin):
    extra_list_display = ["subjects_cell"]
    detail_fieldsets = [("Binding", {"fields": ["role_ref_display", "subjects_display"]})]

    @admin.display(description="SUBJECTS")
    def subjects_cell(self, obj):
        return subjects_summary(obj.subjects)

    @admin.display(description="roleRef")
    def role_ref_display(self, obj):
        ref = obj.role_ref if isinstance(obj.role_ref, dict) else {}
        if not ref:
            return compact(obj.role_ref)
        kind_name, name = ref.get("kind"), ref.get("name")
        model = {"Role": Role, "ClusterRole": ClusterRole}.get(kind_name)
        role_kind = registry.for_model(model) if model is not None else None
        role = find_object(role_kind, getattr(obj, "namespace", None), name)
        text = f"{kind_name}/{name}"
        if role is None:
            return format_html(
                "{} <span class='k-badge k-bad' title='no such {}'>not found</span>",
                text,
                kind_name,
            )
        return link_to(role, text, self.admin_site)

    @admin.display(description="subjects")
    def subjects_display(self, obj):
        subjects = obj.subjects
        if not isinstance(subjects, list):
            return compact(subjects)
        if not subjects:
            return "no subjects"
        rows = []
        for subject in subjects:
            if not isinstance(subject, dict):
                rows.append((compact(subject), "", "", ""))
                continue
            rows.append(
                (
                    compact(subject.get("kind")),
                    compact(subject.get("name")),
                    compact(subject.get("namespace")),
                    compact(subject.get("apiGroup")),
                )
            )
        return simple_table(("kind", "name", "namespace", "apiGroup"), rows)


@admin.register(RoleBinding)
class RoleBindingAdmin(BindingAdminBase):
    pass


@admin.register(ClusterRoleBinding)
class ClusterRoleBindingAdmin(BindingAdminBase):
    pass
