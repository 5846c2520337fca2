"""The admin site of the portal: the index is the overview (tiles) over the models in
sections; an app's own index page keeps Django's listing."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig

from . import SECTIONS, OverviewView, placement, render_tiles


class PortalAdminSite(admin.AdminSite):
    site_header = "kruntimes portal"
    site_title = "kruntimes portal"
    index_title = "Overview"
    index_template = "admin/overview/index.html"

    def get_app_list(self, request, app_label=None):
        if app_label is not None:
            return super().get_app_list(request, app_label)
        by_section: dict[str, list[tuple[int, str, dict]]] = {key: [] for key, _t, _o in SECTIONS}
        for app in self._build_app_dict(request).values():
            for model in app["models"]:
                key = f"{app['app_label']}.{model['object_name']}".lower()
                section, order = placement(key)
                by_section[section].append((order, model["name"], model))
        sections = []
        for key, title, opened in SECTIONS:
            models = [
                model for _order, _name, model in sorted(by_section[key], key=lambda m: m[:2])
            ]
            if models:
                sections.append(
                    {
                        "name": title,
                        "app_label": f"section-{key}",
                        "app_url": f"{self.index_url()}#section-{key}",
                        "has_module_perms": True,
                        "models": models,
                        "open": opened,
                    }
                )
        return sections

    def index_url(self) -> str:
        from django.urls import reverse

        return reverse(f"{self.name}:index")

    def index(self, request, extra_context=None):
        from portal.models import Namespace

        namespace = request.GET.get("namespace", "")
        view = OverviewView(request=request, site=self, namespace=namespace)
        sections = self.get_app_list(request)
        context = {
            "open_sections": [[s] for s in sections if s["open"]],
            "closed_sections": [[s] for s in sections if not s["open"]],
            "overview_tiles": render_tiles(view),
            "overview_namespace": namespace,
            "overview_namespaces": list(
                Namespace.objects.order_by("name").values_list("name", flat=True)[:200]
            ),
            "overview_now": view.now,
            **(extra_context or {}),
        }
        return super().index(request, context)


class PortalAdminConfig(AdminConfig):
    default_site = "portal.overview.site.PortalAdminSite"
