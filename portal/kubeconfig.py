"""A kubeconfig for one user of this portal: the data dir's CA as the cluster's authority and
the user's API token (DRF authtoken), so kubectl and the Kubernetes client libraries verify
the server and authenticate exactly as against a cluster."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml

CLUSTER = "kruntimes"
DEFAULT_SERVER = "https://127.0.0.1:8000"


def kubeconfig(
    *, server: str, ca_pem: bytes, username: str, token: str, namespace: str = ""
) -> dict[str, Any]:
    context: dict[str, str] = {"cluster": CLUSTER, "user": username}
    if namespace:
        context["namespace"] = namespace
    name = f"{username}@{CLUSTER}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [
            {
                "name": CLUSTER,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": username, "user": {"token": token}}],
        "contexts": [{"name": name, "context": context}],
        "current-context": name,
    }


def as_yaml(config: dict[str, Any]) -> str:
    return yaml.safe_dump(config, sort_keys=False)


def write_private(path: Path, text: str) -> None:
    """A kubeconfig holds a token: written 0600, replaced whole."""
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.replace(aside, path)


def for_user(user: Any, *, server: str, namespace: str = "") -> str:
    """The kubeconfig YAML for a Django user (its token made if missing)."""
    from rest_framework.authtoken.models import Token

    from portal import tls

    ca = tls.ensure_ca(tls.data_dir_paths())
    token, _ = Token.objects.get_or_create(user=user)
    return as_yaml(
        kubeconfig(
            server=server,
            ca_pem=tls.pem(ca),
            username=user.get_username(),
            token=token.key,
            namespace=namespace,
        )
    )
