"""The scheduling kinds' printer columns, as kubectl's server-side Table shows them."""

from __future__ import annotations

import pytest

from tests.helpers.runs import run_manifest, runs_url, runtime_manifest, runtimes_url
from tests.portal.machinery.test_tables import KUBECTL_ACCEPT

pytestmark = pytest.mark.django_db


def columns(client, url):
    body = client.get(url, HTTP_ACCEPT=KUBECTL_ACCEPT).json()
    return [(c["name"], c["priority"]) for c in body["columnDefinitions"]], body["rows"]


def test_run_columns_are_phase_runtime_pod_reason_age(admin_api):
    admin_api.post(runtimes_url(), runtime_manifest(), format="json")
    admin_api.post(runs_url(), run_manifest("r1"), format="json")
    defined, [row] = columns(admin_api, runs_url())
    assert [name for name, priority in defined if priority == 0] == [
        "Name",
        "Phase",
        "Runtime",
        "Pod",
        "Reason",
        "Age",
    ]
    assert [name for name, priority in defined if priority == 1] == ["Attempt", "Message"]
    assert row["cells"][:5] == ["r1", "Pending", "bash", "<none>", "<none>"]


def test_runtime_columns_include_ready_and_age(admin_api):
    admin_api.post(runtimes_url(), runtime_manifest(), format="json")
    defined, [row] = columns(admin_api, runtimes_url())
    narrow = [name for name, priority in defined if priority == 0]
    assert narrow[0] == "Name" and narrow[-1] == "Age" and "Ready" in narrow
    assert row["cells"][narrow.index("Ready")] == "0"
