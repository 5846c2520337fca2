"""ArtifactRefs refused at admission over real HTTP (a live server and ``requests``): the
422 Status names the field at fault and nothing is stored."""

from __future__ import annotations

import pytest
import requests
from rest_framework.authtoken.models import Token

from scheduling.models import Run
from tests.helpers.runs import artifact_ref, run_manifest, runs_url

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    ("location", "field"),
    [
        ({"filesystem": {"path": "/tmp/report"}}, "location.filesystem.path"),
        ({"filesystem": {"path": "a/../../escape"}}, "location.filesystem.path"),
    ],
    ids=["absolute", "escaping"],
)
def test_a_ref_outside_its_store_is_refused_over_http(live_server, admin_user, location, field):
    token = Token.objects.create(user=admin_user).key
    manifest = run_manifest(
        artifactInputs=[{"ref": artifact_ref(location=location), "path": "in/report"}]
    )
    response = requests.post(
        live_server.url + runs_url(),
        json=manifest,
        timeout=10,
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 422
    status = response.json()
    assert (status["kind"], status["reason"]) == ("Status", "Invalid")
    assert [c["field"] for c in status["details"]["causes"]] == [
        f"spec.artifactInputs[0].ref.{field}"
    ]
    assert not Run.objects.exists()
