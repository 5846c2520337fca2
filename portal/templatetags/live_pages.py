"""``{% live_watch_url cl %}``: the watch a change list refreshes its rows from
(``portal/static/portal/live.js``): the kind's collection (in the filtered namespace, when
one is), from the newest version now, so the stream carries only what changes after."""

from __future__ import annotations

from urllib.parse import quote

from django import template

from portal.machinery import history
from portal.machinery.registry import registry

register = template.Library()


@register.simple_tag
def live_watch_url(cl) -> str:
    kind = registry.for_model(cl.model)
    if kind is None:
        return ""
    base = f"/apis/{kind.group}/{kind.version}" if kind.group else f"/api/{kind.version}"
    namespace = cl.params.get("namespace") or cl.params.get("namespace__exact")
    if kind.namespaced and isinstance(namespace, str) and namespace:
        base = f"{base}/namespaces/{quote(namespace, safe='')}"
    return f"{base}/{kind.plural}?watch=true&resourceVersion={history.current()}"
