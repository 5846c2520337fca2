"""The live portal over HTTP (``manage.py up``): its Runtime, a script Run, a Run's phase, its processes."""

from __future__ import annotations

import os

API = "/apis/kruntimes.io/v1alpha1/namespaces/default"


RUNTIME = {
    "apiVersion": "kruntimes.io/v1alpha1",
    "kind": "Runtime",
    "metadata": {"name": "bash"},
    "spec": {
        "template": {"spec": {"containers": [{"name": "runtime", "image": "bash:5"}]}},
        "replicas": 2,
    },
}


def script_run(name: str, script: str) -> dict:
    return {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "Run",
        "metadata": {"name": name},
        "spec": {"runtime": "bash", "source": {"inline": script}, "mode": {"task": {}}},
    }


def phase(session, base, name) -> str:
    return (
        session.get(f"{base}{API}/runs/{name}", timeout=5).json().get("status", {}).get("phase", "")
    )


def running_with(marker: str) -> bool:
    """Is any process running with ``marker`` in its command line?"""
    for proc in os.listdir("/proc"):
        try:
            with open(f"/proc/{proc}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    return True
        except OSError:
            continue
    return False


def ready_pods() -> int:
    from scheduling.models import RuntimePod

    return RuntimePod.objects.filter(ready=True).count()
