"""API tests: clients with real bearer tokens, URLs and bodies of the test-only Widget/Gadget kinds."""

from __future__ import annotations

import json
import re

from rest_framework.test import APIClient

GROUP = "testing.kruntimes.io"
API_VERSION = f"{GROUP}/v1"


def widgets(namespace: str = "default") -> str:
    return f"/apis/{GROUP}/v1/namespaces/{namespace}/widgets"


def gadgets() -> str:
    return f"/apis/{GROUP}/v1/gadgets"


def widget(name: str, size: int = 1, **extra) -> dict:
    metadata = {"name": name, **extra.pop("metadata", {})}
    return {
        "apiVersion": API_VERSION,
        "kind": "Widget",
        "metadata": metadata,
        "spec": {"size": size, **extra},
    }


def merge_patch(client, url: str, body: dict):
    return client.patch(url, json.dumps(body), content_type="application/merge-patch+json")


def causes(response) -> dict[str, str]:
    """field -> reason of a Status response's causes."""
    return {c["field"]: c["reason"] for c in response.json()["details"]["causes"]}


def assert_status(response, code: int, reason: str) -> dict:
    body = response.json()
    assert response.status_code == code, body
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["status"] == "Failure"
    assert body["reason"] == reason and body["code"] == code
    return body


def token_client(user) -> APIClient:
    from rest_framework.authtoken.models import Token

    token, _ = Token.objects.get_or_create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token.key}")
    return client


def shown_text(error) -> str:
    """An admin form error as the page reads it (the YAML excerpt next to it left out)."""
    import html

    text = re.sub(r"<pre .*?</pre>", "", str(error), flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", text))


WARNING = re.compile(r'\s*(\d{3}) (\S+) "((?:[^"\\]|\\.)*)"\s*(?:,|$)')


def warnings_of(response) -> list[str]:
    """The texts of a response's ``Warning`` header, parsed as client-go parses it (code 299,
    agent ``-``, a quoted string with backslash escapes; comma-separated); [] without one."""
    header = response.headers.get("Warning")
    if header is None:
        return []
    texts, position = [], 0
    while position < len(header):
        found = WARNING.match(header, position)
        assert found is not None, f"malformed Warning header at {position}: {header!r}"
        assert found.group(1) == "299" and found.group(2) == "-", header
        texts.append(re.sub(r"\\(.)", r"\1", found.group(3)))
        position = found.end()
    return texts
