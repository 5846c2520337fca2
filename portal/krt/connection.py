"""The one way krt reaches the portal: a kubeconfig, through the official ``kubernetes``
client's ApiClient (its TLS, token, client-certificate and exec-plugin handling), exactly as
kubectl would, never the database.

``Connection.request`` sends one call and returns the raw urllib3 response (so logs, watches
and artifacts stream); any non-2xx answer becomes an ``ApiError`` carrying the Status'
message, any transport failure a ``KrtError`` naming the server."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .errors import KrtError, api_error

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
DEFAULT_TIMEOUT = 30.0
USER_AGENT = "krt"


@dataclass(frozen=True)
class Target:
    """Where and as whom: the flags kubectl users know."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    as_user: str | None = None


def context_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace the kubeconfig's (current or named) context sets, else ``default``."""
    from kubernetes import config

    try:
        contexts, current = config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError) as exc:
        raise KrtError(f"kubeconfig {kubeconfig or '~/.kube/config'}: {exc}") from None
    chosen = current
    if context:
        chosen = next((c for c in contexts if c.get("name") == context), None)
        if chosen is None:
            raise KrtError(f'kubeconfig: context "{context}" does not exist')
    return str(((chosen or {}).get("context") or {}).get("namespace") or "default")


class Connection:
    """An ApiClient for one kubeconfig context, a default namespace and an identity."""

    def __init__(self, api_client: Any, namespace: str) -> None:
        self.api = api_client
        self.namespace = namespace

    @classmethod
    def open(cls, target: Target = Target()) -> Connection:
        from kubernetes import client, config

        # $KUBECONFIG as it is now (the client reads it once, when first imported)
        kubeconfig = target.kubeconfig or os.environ.get("KUBECONFIG") or None
        target = replace(target, kubeconfig=kubeconfig)
        context_default = context_namespace(kubeconfig, target.context)  # names a bad context

        configuration = type.__call__(client.Configuration)  # as new_client_from_config
        try:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=target.kubeconfig,
                context=target.context,
                client_configuration=configuration,
                persist_config=False,
            )
        except (config.ConfigException, OSError, ValueError) as exc:
            raise KrtError(f"kubeconfig: {exc}") from None
        configuration.retries = False  # a refused connection is one clear error, at once
        api = client.ApiClient(configuration=configuration)
        api.user_agent = USER_AGENT  # the field manager the server records for krt's writes
        if target.as_user:
            api.set_default_header("Impersonate-User", target.as_user)  # type: ignore[no-untyped-call]
        return cls(api, target.namespace or context_default)

    @property
    def server(self) -> str:
        return str(self.api.configuration.host)

    def bearer_token(self) -> str | None:
        """The kubeconfig user's token (as the client would send it), if it has one."""
        cfg = self.api.configuration
        if getattr(cfg, "refresh_api_key_hook", None):
            cfg.refresh_api_key_hook(cfg)
        value = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
        if not value:
            return None
        return str(value).removeprefix("Bearer ").strip()

    def ca_pem(self) -> str:
        """The cluster CA the kubeconfig trusts (PEM text), or "" for the system's."""
        path = self.api.configuration.ssl_ca_cert
        return Path(path).read_text() if path else ""

    def client_cert(self) -> tuple[str | None, str | None]:
        cfg = self.api.configuration
        return cfg.cert_file, cfg.key_file

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | Sequence[tuple[str, Any]] | None = None,
        body: Any = None,
        content_type: str = JSON,
        accept: str = JSON,
        timeout: float | tuple[float, float | None] | None = DEFAULT_TIMEOUT,
    ) -> Any:
        """The urllib3 response of one call (not yet read); raises ApiError for non-2xx."""
        import urllib3

        params = list(query.items() if isinstance(query, Mapping) else query or [])
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            call = self.api.param_serialize(
                method=method,
                resource_path=path,
                query_params=[(k, _query_value(v)) for k, v in params if v is not None],
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self.api.call_api(*call, _request_timeout=timeout).response
        except urllib3.exceptions.HTTPError as exc:
            raise KrtError(f"cannot reach {self.server}: {_transport_reason(exc)}") from None
        except Exception as exc:  # the client's ApiException (TLS failures) and the like
            if type(exc).__name__ == "ApiException":
                raise KrtError(f"cannot reach {self.server}: {_first_line(exc)}") from None
            raise
        if not 200 <= response.status < 300:
            data = response.data
            response.release_conn()
            raise api_error(response.status, data, response.reason or "")
        return response

    def json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self.request(method, path, **kwargs)
        try:
            data = response.data
        except Exception as exc:
            raise KrtError(f"reading the answer of {self.server}: {exc}") from None
        try:
            return dict(json.loads(data or b"{}"))
        except ValueError:
            raise KrtError(f"{method} {path}: the server's answer is not JSON") from None

    def watch(
        self, path: str, query: Mapping[str, Any], *, timeout: float
    ) -> Iterator[dict[str, Any]]:
        """The events of ``?watch=true`` (each ``{"type", "object"}``) until ``timeout``
        seconds of silence or the server ends the stream."""
        import urllib3

        response = self.request(
            "GET",
            path,
            query={**query, "watch": "true", "allowWatchBookmarks": "true"},
            timeout=(DEFAULT_TIMEOUT, timeout),
        )
        try:
            yield from _json_lines(response)
        except KrtError as exc:
            if isinstance(exc.__context__, urllib3.exceptions.ReadTimeoutError):
                return  # quiet for the whole window: the caller reads afresh
            raise


def stream_chunks(response: Any) -> Iterator[bytes]:
    """Bytes as the server sends them (a log follow must not wait for a full buffer)."""
    import urllib3

    ended = False
    try:
        while True:
            chunk = response.read1(65536)
            if not chunk:
                ended = True
                return
            yield chunk
    except urllib3.exceptions.HTTPError as exc:
        raise KrtError(f"the stream broke: {_transport_reason(exc)}") from None
    finally:
        if not ended:  # left mid-body (a watch that saw enough): never reuse the connection
            response.close()
        response.release_conn()


def _json_lines(response: Any) -> Iterator[dict[str, Any]]:
    pending = b""
    for chunk in stream_chunks(response):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield json.loads(line)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "reason", "") or exc).strip().splitlines()
    return " ".join(text[-1].split()) if text else type(exc).__name__


def _transport_reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    text = str(reason)
    # urllib3 wraps "<connection object>: Failed to establish a new connection: [Errno 111] ..."
    return text.split(": ", 1)[-1] if "object at 0x" in text else text


def decode_ca_bundle(value: str | None) -> str:
    """``status.endpoint.caBundle`` as PEM text: the portal publishes PEM; base64 of PEM (the
    convention of Kubernetes' own caBundle fields) is accepted too."""
    if not value:
        return ""
    if "-----BEGIN" in value:
        return value
    try:
        return base64.b64decode(value, validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        raise KrtError("the Run's status.endpoint.caBundle is neither PEM nor base64 PEM") from None
