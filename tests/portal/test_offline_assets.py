"""Swagger UI and Redoc work offline: every script, stylesheet and image they load comes
from the portal's own static files (drf-spectacular-sidecar), none from a CDN."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

pytestmark = pytest.mark.django_db
EXTERNAL = re.compile(r"""(?:https?:)?//[^\s"'<>]+""")


class Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href") and value:
                self.found.append(value)


def referenced(page: str) -> list[str]:
    parser = Assets()
    parser.feed(page)
    # the page's own script also names bundles as JS strings
    quoted = re.findall(r"""["']([^"']+\\.(?:js|css|png))["']""", page)
    return parser.found + quoted


def body(response) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return response.content


@pytest.mark.parametrize("page_url", ["/api/docs/", "/api/redoc/"])
def test_a_docs_page_and_every_asset_it_loads_come_from_the_portal(admin_client, page_url):
    response = admin_client.get(page_url)
    assert response.status_code == 200
    page = response.content.decode()
    external = [url for url in EXTERNAL.findall(page) if "www.w3.org" not in url]
    assert external == [], external
    assets = [a for a in referenced(page) if not a.startswith(("#", "data:"))]
    assert any(a.endswith(".js") for a in assets), assets
    for asset in sorted(set(assets)):
        url = urljoin(page_url, asset)
        fetched = Client().get(url)
        assert fetched.status_code == 200, url
        assert body(fetched), url


def test_the_schema_the_docs_load_is_served(admin_client):
    response = admin_client.get("/api/schema/")
    assert response.status_code == 200


def test_every_console_page_has_the_portal_icon_and_favicon_ico_finds_it(admin_client):
    pages = [admin_client.get(p) for p in ("/admin/", "/admin/scheduling/run/")]
    for response in [*pages, Client().get("/admin/login/")]:
        assert response.status_code == 200
        html = response.content.decode()
        assert '<link rel="icon" type="image/svg+xml" href="/static/portal/favicon.svg">' in html
    icon = admin_client.get("/favicon.ico")
    assert icon.status_code == 301 and icon["Location"] == "/static/portal/favicon.svg"
    assert finders.find("portal/favicon.svg") is not None
