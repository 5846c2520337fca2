"""A Run's artifacts are downloaded from its page through the API
(``GET .../runs/<name>/artifacts/<artifact>``, ``scheduling.artifact_views``): the same
``runs/artifacts`` RBAC check and the same Status errors for a browser as for curl."""

from __future__ import annotations

from django.urls import reverse

from scheduling.models import Run


def download_url(run: Run, name: str) -> str:
    return reverse(
        "run-artifact", kwargs={"namespace": run.namespace, "name": run.name, "artifact": name}
    )
