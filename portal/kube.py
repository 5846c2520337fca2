"""The one place that configures the official ``kubernetes`` client.

Order: an explicit ``host`` (tests: no auth, no TLS verification), the kubeconfig named by
``settings.KRUNTIMES_KUBECONFIG``, the in-cluster ServiceAccount, then ``~/.kube/config``.
"""

from __future__ import annotations

import os
from functools import lru_cache

import kubernetes
from django.conf import settings
from kubernetes.config.config_exception import ConfigException

DEFAULT_KUBECONFIG = "~/.kube/config"


def api_client(
    *, host: str | None = None, kubeconfig: str | None = None
) -> kubernetes.client.ApiClient:
    """A shared ApiClient for ``host`` or ``kubeconfig`` (default: the configured one)."""
    if kubeconfig is None:
        kubeconfig = getattr(settings, "KRUNTIMES_KUBECONFIG", "") or ""
    return _cached_client(host or "", kubeconfig)


@lru_cache(maxsize=16)
def _cached_client(host: str, kubeconfig: str) -> kubernetes.client.ApiClient:
    return kubernetes.client.ApiClient(configuration(host=host, kubeconfig=kubeconfig))


def configuration(*, host: str = "", kubeconfig: str = "") -> kubernetes.client.Configuration:
    config = kubernetes.client.Configuration()
    if host:
        config.host = host.rstrip("/")
        config.verify_ssl = False
        config.proxy = None  # a test server on localhost is never behind a proxy
        return config
    if kubeconfig:
        kubernetes.config.load_kube_config(
            config_file=os.path.expanduser(kubeconfig),
            client_configuration=config,
            persist_config=False,
        )
        return config
    try:
        kubernetes.config.load_incluster_config(client_configuration=config)
    except ConfigException:
        kubernetes.config.load_kube_config(
            config_file=os.path.expanduser(DEFAULT_KUBECONFIG),
            client_configuration=config,
            persist_config=False,
        )
    return config


def clear_cache() -> None:
    """Forget cached clients (tests that change the configuration between runs)."""
    _cached_client.cache_clear()
