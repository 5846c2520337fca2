"""``bench api --objects N``: request latency on a database holding N Runs, in this process
(Django test client: the whole request path, no HTTP server), p50/p99 ms of each of:

- ``namespace_page``: the first page (limit 500) of one namespace's Runs;
- ``deep_continue``: a page (limit 500) continued from 90% into that namespace;
- ``label_selector``: ``labelSelector=slot=s7`` in that namespace (10 matches);
- ``all_namespaces``: the first page (limit 500) of every namespace's Runs;
- ``get``: one Run;
- ``admin_changelist``: the admin's Run changelist.

The Runs sit in namespaces of 10,000, each labelled ``slot=s<i mod 1000>``."""

from __future__ import annotations

import time
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from portal.machinery.views import encode_continue
from portal.settle import settle
from scheduling.models import Run

from . import bulk
from . import workload as setup
from .measure import percentile
from .workload import Log

PER_NAMESPACE = 10_000
PREFIX = "bench-api"
USER = "bench-api"
API = "/apis/kruntimes.io/v1alpha1"


def _namespaces(objects: int) -> list[str]:
    return [f"{PREFIX}-{i:03d}" for i in range(max(1, -(-objects // PER_NAMESPACE)))]


def _populate(objects: int, log: Log) -> list[str]:
    from portal.machinery import store
    from portal.models import Namespace

    namespaces = _namespaces(objects)
    _drop(namespaces)
    work = setup.Workload(namespaces[0], runs=1, pods=1)
    setup.create(work, log)  # the first namespace, its Runtime and one template Run
    Run.objects.filter(namespace=namespaces[0]).delete()
    template = work._template(0)
    for name in namespaces[1:]:
        if not Namespace.objects.filter(name=name).exists():
            store.create(
                setup._kind("", "v1", "namespaces"),
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                context=setup.OPERATOR,
            )
    now = timezone.now()

    def make(run: Run, i: int) -> None:
        run.namespace = namespaces[i // PER_NAMESPACE]
        run.name = f"run-{i % PER_NAMESPACE:05d}"
        run.labels = {"app": "bench", "slot": f"s{i % 1000}"}

    bulk.create_runs(template, objects, make, log, created=now - timedelta(days=1))
    bulk.analyze(log)
    return namespaces


def _drop(namespaces: list[str]) -> None:
    for name in namespaces:
        Run.objects.filter(namespace=name)._raw_delete(Run.objects.db)
        setup.delete_namespace(name)


def _clients():
    from django.contrib.auth import get_user_model
    from django.test import Client
    from rest_framework.test import APIClient

    user, _ = get_user_model().objects.get_or_create(
        username=USER, defaults={"is_superuser": True, "is_staff": True}
    )
    host = (
        "testserver"
        if ("*" in settings.ALLOWED_HOSTS or not settings.ALLOWED_HOSTS)
        else (settings.ALLOWED_HOSTS[0].lstrip("."))
    )
    api = APIClient(SERVER_NAME=host)
    api.force_authenticate(user=user)
    admin = Client(SERVER_NAME=host)
    admin.force_login(user)
    return api, admin


def run_api_bench(objects: int, log: Log, repeats: int = 30, keep: bool = False) -> dict:
    started = time.perf_counter()
    namespaces = _populate(objects, log)
    log(f"setup took {time.perf_counter() - started:.1f} s")
    first = namespaces[0]
    in_first = min(objects, PER_NAMESPACE)
    deep = encode_continue([first, f"run-{int(in_first * 0.9):05d}"])
    api, admin = _clients()
    settle()  # as a web process does once it has loaded what it serves (portal.asgi)
    requests = {
        "namespace_page": (api, f"{API}/namespaces/{first}/runs?limit=500"),
        "deep_continue": (api, f"{API}/namespaces/{first}/runs?limit=500&continue={deep}"),
        "label_selector": (api, f"{API}/namespaces/{first}/runs?labelSelector=slot%3Ds7"),
        "all_namespaces": (api, f"{API}/runs?limit=500"),
        "get": (api, f"{API}/namespaces/{first}/runs/run-00007"),
        "admin_changelist": (admin, "/admin/scheduling/run/"),
    }
    result: dict = {"objects": objects}
    try:
        for name, (client, url) in requests.items():
            ms = []
            for _ in range(repeats + 1):
                began = time.perf_counter()
                response = client.get(url)
                ms.append((time.perf_counter() - began) * 1000)
                if response.status_code != 200:
                    raise RuntimeError(f"{name}: {url} answered {response.status_code}")
            ms = ms[1:]  # the first one warms caches
            result[name] = {
                "p50_ms": round(percentile(ms, 0.5), 1),
                "p99_ms": round(percentile(ms, 0.99), 1),
            }
            log(f"{name}: {result[name]}")
        body = api.get(requests["label_selector"][1]).json()
        result["label_selector"]["matches"] = len(body.get("items", []))
    finally:
        if not keep:
            _drop(namespaces)
    return result
