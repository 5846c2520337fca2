"""The README's curl examples work as written: the POST creates a Run, the merge patch sets
``spec.cancelRequested``, the Events query answers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from portal.machinery import store
from portal.machinery.registry import registry
from tests.helpers.operator import OPERATOR

pytestmark = pytest.mark.django_db
README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def curl_examples() -> list[dict]:
    """Each curl command of the README's shell blocks: method, path, content type, body."""
    found = []
    for command in re.findall(r"^curl .*?(?=^\S|\Z)", README, flags=re.M | re.S):
        command = command.replace("\\\n", " ")
        url = re.search(r"https://127\.0\.0\.1:8000(\S+?)'?(?:\s|$)", command)
        body = re.search(r"-d '(.*?)'", command, flags=re.S)
        method = re.search(r"-X (\w+)", command)
        kind = re.search(r"-H 'Content-Type: ([^']+)'", command)
        found.append(
            {
                "method": method.group(1) if method else "GET",
                "path": url.group(1).rstrip("'") if url else "",
                "content_type": kind.group(1) if kind else "",
                "body": json.loads(body.group(1)) if body else None,
            }
        )
    return found


def test_the_readme_posts_a_run_then_cancels_it_by_spec_cancel_requested(admin_api):
    store.create(
        registry.get("", "v1", "namespaces"), {"metadata": {"name": "ci"}}, context=OPERATOR
    )
    examples = {example["method"]: example for example in curl_examples()}
    post, patch = examples["POST"], examples["PATCH"]
    created = admin_api.post(post["path"], post["body"], format="json")
    assert created.status_code == 201, created.json()
    name = created.json()["metadata"]["name"]
    assert name.startswith("hello-")
    patched = admin_api.patch(
        patch["path"].replace("NAME", name),
        json.dumps(patch["body"]),
        content_type=patch["content_type"],
    )
    assert patched.status_code == 200, patched.json()
    assert patched.json()["spec"]["cancelRequested"] is True
    events = next(e for e in curl_examples() if "events" in e["path"])
    assert admin_api.get(events["path"].replace("NAME", name)).status_code == 200


def test_the_readme_never_writes_cancel_requested_without_its_path():
    bare = re.findall(r"(?<![.\w\"{ ])`?cancelRequested: true", README)
    assert bare == [], bare
