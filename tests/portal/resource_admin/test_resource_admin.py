"""The shared ResourceAdmin: list, filters, detail page and every write through the store."""

from __future__ import annotations

from html import escape

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.messages import get_messages
from django.urls import reverse

from portal.machinery import store
from portal.machinery.registry import registry
from portal.machinery.yaml import dump, load_one
from portal.models import ClusterRole, ClusterRoleBinding, Namespace, Role, RoleBinding
from portal.resource_admin import human_duration
from tests.helpers.operator import OPERATOR
from tests.testapp.models import Gadget, Widget

pytestmark = pytest.mark.django_db

READY = {
    "type": "Ready",
    "status": "True",
    "reason": "AllGood",
    "message": "all parts fitted",
    "lastTransitionTime": "2024-01-01T00:00:00Z",
    "observedGeneration": 1,
}
DEGRADED = {
    "type": "Degraded",
    "status": "False",
    "reason": "NoFault",
    "message": "",
    "lastTransitionTime": "2024-01-01T00:00:00Z",
    "observedGeneration": 1,
}
PROGRESSING = {
    "type": "Progressing",
    "status": "Unknown",
    "reason": "Waiting",
    "message": "waiting for a pod",
    "lastTransitionTime": "2024-01-01T00:00:00Z",
    "observedGeneration": 1,
}


@pytest.fixture
def client(client, admin_user):
    client.force_login(admin_user)
    return client


def kind_of(model):
    return registry.for_model(model)


def make_namespace(name):
    return store.create(
        kind_of(Namespace),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        context=OPERATOR,
    )


def make_widget(name, *, namespace="default", size=1, labels=None, finalizers=None, status=None):
    kind = kind_of(Widget)
    store.create(
        kind,
        {
            "apiVersion": kind.api_version,
            "kind": "Widget",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels or {},
                "finalizers": finalizers or [],
            },
            "spec": {"size": size},
        },
        context=OPERATOR,
    )
    if status is not None:
        store.patch(
            kind, namespace, name, {"status": status}, subresource="status", context=OPERATOR
        )
    return Widget.objects.get(namespace=namespace, name=name)


def url(name, *args):
    return reverse(f"admin:testapp_widget_{name}", args=args)


def result_names(response):
    return sorted(obj.name for obj in response.context["cl"].result_list)


def form_errors(response):
    form = response.context["adminform"].form
    return [str(e) for errs in form.errors.values() for e in errs]


def messages_of(response):
    return [str(m) for m in get_messages(response.wsgi_request)]


# ------------------------------------------------------------------------------ the list


def test_changelist_shows_phase_conditions_labels_and_filters(client):
    make_widget(
        "alpha",
        labels={"app": "web", "tier": "front"},
        status={"phase": "Ready", "conditions": [READY, DEGRADED, PROGRESSING]},
    )
    make_widget("beta", size=3, status={"phase": "Pending"})
    response = client.get(url("changelist"))
    assert response.status_code == 200
    html = response.content.decode()
    # phase badges
    assert '<span class="k-badge k-ok" title="">Ready</span>' in html
    assert '<span class="k-badge k-pending" title="">Pending</span>' in html
    # conditions at a glance: colour by status, reason in the tooltip
    assert 'class="k-badge k-ok" title="Ready=True (AllGood): all parts fitted">Ready<' in html
    assert 'class="k-badge k-bad" title="Degraded=False (NoFault)">Degraded<' in html
    assert (
        'class="k-badge k-unknown" title="Progressing=Unknown (Waiting): waiting for a pod"' in html
    )
    # labels as chips, printer column, age
    assert '<span class="k-chip" title="app=web">app=web</span>' in html
    for header in ("NAME", "NAMESPACE", "SIZE", "PHASE", "CONDITIONS", "LABELS", "AGE"):
        assert f">{header}<" in html
    assert ">COLOR<" not in html  # a wide column
    # filters offered
    for title in ("namespace", "phase", "terminating", "label"):
        assert f'data-filter-title="{title}"' in html
    assert "?label=app%3Dweb" in html
    # actions: Kubernetes deletion replaces Django's row delete
    assert 'value="delete_objects"' in html and 'value="remove_finalizers"' in html
    assert 'value="delete_selected"' not in html


def test_the_label_filter_offers_no_uid_values_but_still_applies_one(client):
    uid = "0b7f8a52-4c3e-4a44-9b1e-2f6d7c5e9a10"
    make_widget("alpha", labels={"app": "web", "example.com/parent-uid": uid})
    html = client.get(url("changelist")).content.decode()
    assert "?label=app%3Dweb" in html and uid not in html.split("data-filter-title")[-1]
    response = client.get(url("changelist") + f"?label=example.com/parent-uid%3D{uid}")
    assert result_names(response) == ["alpha"]


def test_list_filters_filter(client):
    make_namespace("team-a")
    make_widget("alpha", labels={"app": "web"}, status={"phase": "Ready"})
    make_widget("beta", labels={"app": "db"}, status={"phase": "Pending"})
    make_widget("gamma", namespace="team-a", labels={"app": "web"}, finalizers=["example.com/hold"])
    store.delete(kind_of(Widget), "team-a", "gamma", context=OPERATOR)

    def names(query):
        response = client.get(url("changelist") + query)
        assert response.status_code == 200
        return result_names(response)

    assert names("") == ["alpha", "beta", "gamma"]
    assert names("?namespace=team-a") == ["gamma"]
    assert names("?namespace=default") == ["alpha", "beta"]
    assert names("?phase=Ready") == ["alpha"]
    assert names("?label=app%3Dweb") == ["alpha", "gamma"]
    assert names("?label=app%3Ddb") == ["beta"]
    assert names("?terminating=yes") == ["gamma"]
    assert names("?terminating=no") == ["alpha", "beta"]
    assert names("?label=app%3Dweb&namespace=default") == ["alpha"]
    html = client.get(url("changelist")).content.decode()
    assert "Terminating" in html


def test_search_by_name_namespace_and_labels(client):
    make_namespace("team-a")
    make_widget("alpha-one", labels={"app": "web", "tier": "front"})
    make_widget("beta-two", namespace="team-a", labels={"app.kubernetes.io/name": "db"})

    def search(term):
        response = client.get(url("changelist"), {"q": term})
        assert response.status_code == 200
        return result_names(response)

    assert search("alpha") == ["alpha-one"]
    assert search("team-a") == ["beta-two"]
    assert search("app=web") == ["alpha-one"]
    assert search("app.kubernetes.io/name=db") == ["beta-two"]
    assert search("app.kubernetes.io/name") == ["beta-two"]
    assert search("app.kubernetes.io/name=db app=web") == []
    assert search("app=web !app.kubernetes.io/name") == ["alpha-one"]
    assert search("app!=web") == ["beta-two"]
    assert search("alpha app=web") == ["alpha-one"]
    assert search("web") == ["alpha-one"]  # label text
    assert search("we") == ["alpha-one"]
    assert search("app=web tier=front") == ["alpha-one"]
    assert search("app=web tier=back") == []
    assert search("nothing-like-it") == []


# ------------------------------------------------------------------------------ detail page


def test_change_page_shows_metadata_conditions_and_yaml(client):
    parent = make_widget("parent")
    kind = kind_of(Widget)
    make_widget(
        "child", labels={"app": "web"}, status={"phase": "Ready", "conditions": [READY, DEGRADED]}
    )
    store.patch(
        kind,
        "default",
        "child",
        {
            "metadata": {
                "annotations": {"note": "hello"},
                "ownerReferences": [
                    {
                        "apiVersion": kind.api_version,
                        "kind": "Widget",
                        "name": "parent",
                        "uid": str(parent.uid),
                    }
                ],
            }
        },
        context=OPERATOR,
    )
    child = Widget.objects.get(name="child")
    response = client.get(url("change", child.pk))
    assert response.status_code == 200
    html = response.content.decode()
    assert str(child.uid) in html
    assert "resourceVersion" in html and "creationTimestamp" in html
    # owner reference links to the owner's admin page
    assert f'href="{url("change", parent.pk)}"' in html
    # the conditions table
    assert 'class="k-table k-conditions"' in html
    for text in (
        "lastTransitionTime",
        "observedGeneration",
        "AllGood",
        "all parts fitted",
        "Degraded",
        "NoFault",
        "2024-01-01T00:00:00Z",
    ):
        assert text in html
    # labels / annotations
    assert "app=web" in html and "hello" in html
    # the whole object as YAML, status included
    assert '<pre class="k-yaml">' in html
    assert "apiVersion: testing.kruntimes.io/v1" in html and "phase: Ready" in html
    # the editable manifest holds no status and no server-set metadata
    manifest = load_one(response.context["adminform"].form.initial["manifest"])
    assert "status" not in manifest
    assert set(manifest["metadata"]) == {
        "name",
        "namespace",
        "labels",
        "annotations",
        "ownerReferences",
    }
    assert manifest["spec"] == {"size": 1, "color": "red"}


def edit(client, obj, change):
    """GET the change page, apply ``change`` to its manifest, POST it back."""
    response = client.get(url("change", obj.pk))
    form = response.context["adminform"].form
    manifest = load_one(form.initial["manifest"])
    change(manifest)
    return form.initial["loaded_resource_version"], manifest


def post_edit(client, obj, manifest, resource_version):
    return client.post(
        url("change", obj.pk),
        {"manifest": dump(manifest), "loaded_resource_version": resource_version, "_save": "Save"},
    )


def test_edit_changes_spec_and_bumps_generation_and_resource_version(client):
    widget = make_widget("alpha", status={"phase": "Ready", "conditions": [READY]})
    rv, manifest = edit(
        client,
        widget,
        lambda m: (m["spec"].update(size=5), m["metadata"].update(labels={"app": "web"})),
    )
    response = post_edit(client, widget, manifest, rv)
    assert response.status_code == 302, form_errors(response)
    after = Widget.objects.get(pk=widget.pk)
    assert after.spec["size"] == 5
    assert after.labels == {"app": "web"}
    assert after.generation == widget.generation + 1
    assert after.resource_version > widget.resource_version
    assert after.status["phase"] == "Ready"  # status untouched by an edit


def test_unchanged_save_writes_nothing(client):
    widget = make_widget("alpha")
    rv, manifest = edit(client, widget, lambda m: None)
    response = post_edit(client, widget, manifest, rv)
    assert response.status_code == 302
    assert Widget.objects.get(pk=widget.pk).resource_version == widget.resource_version


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda m: m["spec"].update(size=99), "spec.size"),
        (lambda m: m["spec"].update(bogus=1), "spec.bogus"),
        (lambda m: m["spec"].update(color="blue"), "spec.color"),  # immutable
        (lambda m: m.update(extra={"a": 1}), "extra"),
        (lambda m: m["metadata"].update(labels={"bad key!": "x"}), "metadata.labels"),
    ],
)
def test_invalid_edit_names_the_field_and_changes_nothing(client, change, field):
    widget = make_widget("alpha")
    rv, manifest = edit(client, widget, change)
    response = post_edit(client, widget, manifest, rv)
    assert response.status_code == 200
    errors = form_errors(response)
    assert any(e.startswith(f"{field}") for e in errors), errors
    assert field in response.content.decode()
    after = Widget.objects.get(pk=widget.pk)
    assert (after.spec, after.labels, after.resource_version, after.generation) == (
        widget.spec,
        widget.labels,
        widget.resource_version,
        widget.generation,
    )


def test_an_edit_breaking_an_immutable_field_and_a_field_rule_shows_both(client):
    widget = make_widget("alpha")
    rv, manifest = edit(client, widget, lambda m: m["spec"].update(size=99, color="blue"))
    response = post_edit(client, widget, manifest, rv)
    assert response.status_code == 200
    errors = form_errors(response)
    assert [e.split(":")[0] for e in errors] == ["spec.size", "spec.color"], errors
    assert any("field is immutable" in e for e in errors), errors
    assert Widget.objects.get(pk=widget.pk).resource_version == widget.resource_version


def test_bad_yaml_is_a_form_error(client):
    widget = make_widget("alpha")
    for text in ("spec: [unclosed", "- just\n- a list\n"):
        response = client.post(
            url("change", widget.pk),
            {"manifest": text, "loaded_resource_version": widget.resource_version},
        )
        assert response.status_code == 200
        assert form_errors(response)
    assert Widget.objects.get(pk=widget.pk).resource_version == widget.resource_version


def test_stale_edit_is_a_conflict_not_an_overwrite(client):
    widget = make_widget("alpha")
    rv, manifest = edit(client, widget, lambda m: m["spec"].update(size=7))
    # someone else writes between our GET and our POST
    store.patch(kind_of(Widget), "default", "alpha", {"spec": {"size": 2}}, context=OPERATOR)
    response = post_edit(client, widget, manifest, rv)
    assert response.status_code == 200
    html = response.content.decode()
    assert "the object has been modified" in html
    assert any("the object has been modified" in e for e in form_errors(response))
    assert Widget.objects.get(pk=widget.pk).spec["size"] == 2


# ------------------------------------------------------------------------------ add page


def test_add_page_creates_through_the_store(client):
    make_namespace("team-a")
    response = client.get(url("add"))
    assert response.status_code == 200
    skeleton = load_one(response.context["adminform"].form.initial["manifest"])
    assert skeleton["kind"] == "Widget" and skeleton["metadata"]["namespace"] == "default"
    # coming from a changelist filtered by namespace, the skeleton uses that namespace
    response = client.get(url("add"), {"_changelist_filters": "namespace=team-a"})
    skeleton = load_one(response.context["adminform"].form.initial["manifest"])
    assert skeleton["metadata"]["namespace"] == "team-a"
    manifest = {
        "apiVersion": "testing.kruntimes.io/v1",
        "kind": "Widget",
        "metadata": {"name": "fresh", "namespace": "team-a", "labels": {"app": "web"}},
        "spec": {"size": 4, "parts": [{"name": "bolt"}]},
    }
    response = client.post(url("add"), {"manifest": dump(manifest), "_save": "Save"})
    assert response.status_code == 302, form_errors(response)
    widget = Widget.objects.get(namespace="team-a", name="fresh")
    assert widget.spec == {"size": 4, "color": "red", "parts": [{"name": "bolt", "count": 1}]}
    assert widget.generation == 1 and widget.labels == {"app": "web"}


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ({"metadata": {"name": "fresh"}, "spec": {"size": 99}}, "spec.size"),
        ({"metadata": {"name": "fresh"}, "spec": {}}, "spec.size"),
        ({"metadata": {"name": "Not_A_Name"}, "spec": {"size": 1}}, "metadata.name"),
        (
            {"metadata": {"name": "fresh", "namespace": "nowhere"}, "spec": {"size": 1}},
            'namespaces "nowhere" not found',
        ),
        ({"kind": "Gadget", "metadata": {"name": "fresh"}, "spec": {"size": 1}}, "kind"),
    ],
)
def test_add_page_validation(client, manifest, message):
    response = client.post(url("add"), {"manifest": dump(manifest), "_save": "Save"})
    assert response.status_code == 200
    assert any(message in e for e in form_errors(response)), form_errors(response)
    assert escape(message) in response.content.decode()
    assert not Widget.objects.filter(name="fresh").exists()


def test_add_existing_name_is_already_exists(client):
    make_widget("alpha")
    manifest = {"metadata": {"name": "alpha"}, "spec": {"size": 1}}
    response = client.post(url("add"), {"manifest": dump(manifest)})
    assert response.status_code == 200
    assert "already exists" in response.content.decode()


# ------------------------------------------------------------------------------ deletion


def test_delete_with_finalizer_leaves_terminating_then_remove_finalizers(client):
    widget = make_widget("held", finalizers=["example.com/hold"])
    page = client.get(url("delete", widget.pk))
    assert page.status_code == 200
    assert "example.com/hold" in page.content.decode()
    response = client.post(url("delete", widget.pk), {"post": "yes"})
    assert response.status_code == 302
    assert response.url == url("change", widget.pk)
    held = Widget.objects.get(pk=widget.pk)
    assert held.deletion_timestamp is not None
    assert any("Terminating" in m for m in messages_of(response))
    assert "Terminating" in client.get(url("change", widget.pk)).content.decode()

    action = {"action": "remove_finalizers", "_selected_action": [str(widget.pk)]}
    confirm = client.post(url("changelist"), action)
    assert confirm.status_code == 200
    html = confirm.content.decode()
    assert "example.com/hold" in html and 'name="post" value="yes"' in html
    assert Widget.objects.filter(pk=widget.pk).exists()  # nothing happens before confirming
    response = client.post(url("changelist"), {**action, "post": "yes"})
    assert response.status_code == 302
    assert not Widget.objects.filter(pk=widget.pk).exists()


def test_delete_without_finalizer_removes_the_row(client):
    widget = make_widget("plain")
    response = client.post(url("delete", widget.pk), {"post": "yes"})
    assert response.status_code == 302
    assert response.url == url("changelist")
    assert not Widget.objects.filter(pk=widget.pk).exists()


def test_remove_finalizers_on_a_live_object_keeps_it(client):
    widget = make_widget("live", finalizers=["example.com/hold"])
    client.post(
        url("changelist"),
        {"action": "remove_finalizers", "post": "yes", "_selected_action": [str(widget.pk)]},
    )
    after = Widget.objects.get(pk=widget.pk)
    assert after.finalizers == [] and after.deletion_timestamp is None


def test_remove_finalizers_writes_an_audit_entry_naming_them_and_the_user(client, admin_user):
    widget = make_widget("held", finalizers=["example.com/hold", "example.com/other"])
    plain = make_widget("plain")
    store.delete(kind_of(Widget), "default", "held", context=OPERATOR)
    client.post(
        url("changelist"),
        {
            "action": "remove_finalizers",
            "post": "yes",
            "_selected_action": [str(widget.pk), str(plain.pk)],
        },
    )
    assert not Widget.objects.filter(pk=widget.pk).exists()
    (entry,) = LogEntry.objects.filter(action_flag=CHANGE)  # none for the one without
    assert entry.object_id == str(widget.pk) and entry.user == admin_user
    assert "example.com/hold, example.com/other" in entry.change_message
    assert "as admin" in entry.change_message and "is deleted" in entry.change_message


def test_bulk_delete_action_uses_kubernetes_semantics(client):
    plain = make_widget("plain")
    held = make_widget("held", finalizers=["example.com/hold"])
    action = {"action": "delete_objects", "_selected_action": [str(plain.pk), str(held.pk)]}
    confirm = client.post(url("changelist"), action)
    assert confirm.status_code == 200 and "example.com/hold" in confirm.content.decode()
    assert Widget.objects.count() == 2
    response = client.post(url("changelist"), {**action, "post": "yes"})
    assert response.status_code == 302
    assert not Widget.objects.filter(pk=plain.pk).exists()
    assert Widget.objects.get(pk=held.pk).deletion_timestamp is not None
    text = " ".join(messages_of(response))
    assert "Deleted 1" in text and "Terminating" in text


def test_editing_finalizers_away_finishes_a_deletion(client):
    widget = make_widget("held", finalizers=["example.com/hold"])
    store.delete(kind_of(Widget), "default", "held", context=OPERATOR)
    rv, manifest = edit(client, widget, lambda m: m["metadata"].pop("finalizers"))
    response = post_edit(client, widget, manifest, rv)
    assert response.status_code == 302, form_errors(response)
    assert not Widget.objects.filter(pk=widget.pk).exists()


# ------------------------------------------------------------------------------ robustness


def test_unexpected_shapes_do_not_crash(client):
    widget = make_widget("odd", labels={"app": "web"})
    # rows written by something other than the store (an old version, a manual fix)
    Widget.objects.filter(pk=widget.pk).update(
        spec=[1, 2],
        status={"phase": "Ready", "conditions": ["nope", {"type": 3}]},
        owner_references=[{"kind": "Widget", "uid": "not-a-uid"}, "x"],
        annotations=[],
    )
    assert client.get(url("changelist")).status_code == 200
    assert client.get(url("change", widget.pk)).status_code == 200
    Widget.objects.filter(pk=widget.pk).update(status="garbage", labels=["x"])
    assert client.get(url("changelist")).status_code == 200
    assert client.get(url("changelist") + "?label=app%3Dweb").status_code == 200
    response = client.get(url("change", widget.pk))
    assert response.status_code == 200
    assert "garbage" in response.content.decode()


def test_cluster_scoped_kind_pages(client):
    kind = kind_of(Gadget)
    store.create(
        kind,
        {"metadata": {"name": "gizmo", "labels": {"app": "web"}}, "spec": {"size": 2}},
        context=OPERATOR,
    )
    gadget = Gadget.objects.get(name="gizmo")
    response = client.get(reverse("admin:testapp_gadget_changelist"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "gizmo" in html and ">NAMESPACE<" not in html
    assert 'data-filter-title="namespace"' not in html
    response = client.get(reverse("admin:testapp_gadget_change", args=[gadget.pk]))
    assert response.status_code == 200
    manifest = load_one(response.context["adminform"].form.initial["manifest"])
    assert "namespace" not in manifest["metadata"]
    response = client.get(reverse("admin:testapp_gadget_add"))
    assert response.status_code == 200


def test_human_duration():
    assert human_duration(5) == "5s"
    assert human_duration(300) == "5m"
    assert human_duration(330) == "5m30s"
    assert human_duration(3 * 3600) == "3h"
    assert human_duration(30 * 3600) == "30h"
    assert human_duration(3 * 86400 + 4 * 3600) == "3d4h"
    assert human_duration(90 * 86400) == "90d"


# ------------------------------------------------------------------------------ portal kinds


def test_site_titles(client):
    html = client.get(reverse("admin:index")).content.decode()
    assert "kruntimes portal" in html and "Cluster" in html


def test_namespace_pages_and_delete_namespace_action(client):
    make_namespace("team-a")
    make_widget("alpha", namespace="team-a")
    ns = Namespace.objects.get(name="team-a")
    response = client.get(reverse("admin:portal_namespace_changelist"))
    assert response.status_code == 200
    html = response.content.decode()
    assert '<span class="k-badge k-ok" title="">Active</span>' in html
    assert ">Delete namespace<" in html
    response = client.get(reverse("admin:portal_namespace_change", args=[ns.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "1 widgets" in html and "?namespace=team-a" in html

    response = client.post(
        reverse("admin:portal_namespace_changelist"),
        {"action": "delete_objects", "post": "yes", "_selected_action": [str(ns.pk)]},
    )
    assert response.status_code == 302
    ns = Namespace.objects.get(name="team-a")  # spec.finalizers ["kubernetes"] hold it
    assert ns.deletion_timestamp is not None and ns.phase == "Terminating"
    html = client.get(reverse("admin:portal_namespace_changelist")).content.decode()
    assert "k-badge k-warn" in html and ">Terminating<" in html


def test_rbac_pages(client):
    rbac = "rbac.authorization.k8s.io/v1"
    rules = [
        {
            "apiGroups": ["kruntimes.io"],
            "resources": ["runs"],
            "verbs": ["get", "list"],
            "resourceNames": ["run-a"],
        }
    ]
    store.create(
        kind_of(Role),
        {
            "apiVersion": rbac,
            "kind": "Role",
            "metadata": {"name": "reader", "namespace": "default"},
            "rules": rules,
        },
        context=OPERATOR,
    )
    store.create(
        kind_of(ClusterRole),
        {
            "apiVersion": rbac,
            "kind": "ClusterRole",
            "metadata": {"name": "admin-all"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        },
        context=OPERATOR,
    )
    store.create(
        kind_of(RoleBinding),
        {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": {"name": "read-it", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "ServiceAccount", "name": "bot", "namespace": "default"},
            ],
        },
        context=OPERATOR,
    )
    store.create(
        kind_of(ClusterRoleBinding),
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "admins"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "missing",
            },
            "subjects": [{"kind": "Group", "name": "ops"}],
        },
        context=OPERATOR,
    )
    role = Role.objects.get(name="reader")
    binding = RoleBinding.objects.get(name="read-it")

    for model in ("role", "clusterrole", "rolebinding", "clusterrolebinding"):
        response = client.get(reverse(f"admin:portal_{model}_changelist"))
        assert response.status_code == 200, model
    html = client.get(reverse("admin:portal_rolebinding_changelist")).content.decode()
    assert "User:alice" in html and "Role/reader" in html

    html = client.get(reverse("admin:portal_role_change", args=[role.pk])).content.decode()
    for text in (
        "apiGroups",
        "resourceNames",
        "<code>kruntimes.io</code>",
        "<code>runs</code>",
        "<code>get</code> <code>list</code>",
        "<code>run-a</code>",
    ):
        assert text in html
    role_url = reverse("admin:portal_role_change", args=[role.pk])
    assert reverse("admin:portal_rolebinding_change", args=[binding.pk]) in html  # bound by

    html = client.get(
        reverse("admin:portal_rolebinding_change", args=[binding.pk])
    ).content.decode()
    assert f'<a href="{role_url}">Role/reader</a>' in html
    assert "alice" in html and "ServiceAccount" in html and "bot" in html

    crb = ClusterRoleBinding.objects.get(name="admins")
    html = client.get(
        reverse("admin:portal_clusterrolebinding_change", args=[crb.pk])
    ).content.decode()
    assert "ClusterRole/missing" in html and "not found" in html
    cr = ClusterRole.objects.get(name="admin-all")
    assert client.get(reverse("admin:portal_clusterrole_change", args=[cr.pk])).status_code == 200

    # roleRef is immutable: the store's validator answers through the form
    response = client.get(reverse("admin:portal_rolebinding_change", args=[binding.pk]))
    form = response.context["adminform"].form
    manifest = load_one(form.initial["manifest"])
    manifest["roleRef"]["name"] = "other"
    response = client.post(
        reverse("admin:portal_rolebinding_change", args=[binding.pk]),
        {
            "manifest": dump(manifest),
            "loaded_resource_version": form.initial["loaded_resource_version"],
        },
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "roleRef: cannot change roleRef (line " in page


def test_a_true_condition_carrying_the_failure_reason_is_shown_as_the_failure():
    from portal.resource_admin.render import condition_badges

    failed = {
        "phase": "Failed",
        "reason": "RuntimeExecute",
        "conditions": [
            {"type": "Scheduled", "status": "True", "reason": "Scheduled"},
            {"type": "Completed", "status": "True", "reason": "RuntimeExecute"},
        ],
    }
    html = str(condition_badges(failed))
    scheduled, completed = html.split("</span>")[:2]
    assert 'k-ok"' in scheduled and 'k-bad"' in completed
    succeeded = {**failed, "phase": "Succeeded", "reason": "Succeeded"}
    assert 'k-bad"' not in str(condition_badges(succeeded))


@pytest.mark.parametrize(
    ("seconds", "shown"), [(-1, "<1s"), (0.0, "<1s"), (0.9, "<1s"), (1, "1s"), (330, "5m30s")]
)
def test_elapsed_says_under_a_second_rather_than_0s(seconds, shown):
    from portal.resource_admin import elapsed  # noqa: PLC0415

    assert elapsed(seconds) == shown
