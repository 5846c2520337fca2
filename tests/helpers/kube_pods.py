"""The shared emulator (``tests.helpers.kube``) with what the Kubernetes Job adapter's tests
add to it: every request recorded (so a test can show a dry run sent none, or count the
creates of batch Jobs), every exec's argv as sent, and env from Secrets.

Env from Secrets: the emulator's exec gives a process the container's literal ``env``
values only; a kubelet resolves ``valueFrom.secretKeyRef`` when it starts the container.
Here the pod is stored with those references resolved to values (when it is created, from
the Secret as it is then), so an exec sees them as it would in a container.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import aiohttp.web
import attrs

from tests.helpers.emulator import api
from tests.helpers.kube import Emulator


@attrs.define(kw_only=True)
class RecordingEmulator(Emulator):
    # every request: (method, path, the JSON body or None)
    calls: list[tuple[str, str, Any]] = attrs.field(factory=list)
    execs: list[list[str]] = attrs.field(factory=list)  # every exec argv, as sent

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.store.defaulters[("", "pods")] = self._resolve_secret_env

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        body = await raw_request.read()
        try:
            data = json.loads(body) if body else None
        except ValueError:
            data = None
        self.calls.append((raw_request.method.upper(), raw_request.path, data))
        where = api.route(raw_request.path)
        if where is not None and (where.plural, where.subresource) == ("pods", "exec"):
            self.execs.append(list(raw_request.query.getall("command", [])))
        return await super().__call__(raw_request)

    def posted(self, plural: str) -> list[Any]:
        """The bodies of the creates of ``plural`` the server was sent."""
        return [
            data
            for method, path, data in self.calls
            if method == "POST" and (where := api.route(path)) and where.plural == plural
        ]

    def _resolve_secret_env(self, pod: dict) -> None:
        namespace = pod["metadata"].get("namespace")
        for container in (pod.get("spec") or {}).get("containers") or []:
            for var in container.get("env") or []:
                ref = (var.get("valueFrom") or {}).get("secretKeyRef")
                if not ref:
                    continue
                secret = self.store.find("", "secrets", namespace, ref["name"]) or {}
                if ref["key"] in (secret.get("stringData") or {}):
                    value = secret["stringData"][ref["key"]]
                elif ref["key"] in (secret.get("data") or {}):
                    value = base64.b64decode(secret["data"][ref["key"]]).decode()
                else:
                    continue
                var.pop("valueFrom")
                var["value"] = value
