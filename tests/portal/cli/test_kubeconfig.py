"""``manage.py kubeconfig``: the official Kubernetes client loads what it prints, trusting the
data dir's CA and sending the user's token; an unknown user needs --create-user."""

from __future__ import annotations

import base64
import stat
from io import StringIO

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError
from kubernetes import client, config
from rest_framework.authtoken.models import Token

from portal import tls

pytestmark = pytest.mark.django_db


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path


def kubeconfig(*args: str) -> str:
    out = StringIO()
    call_command("kubeconfig", *args, stdout=out)
    return out.getvalue()


def test_the_official_client_loads_it(data_dir, user, tmp_path):
    text = kubeconfig("--user", user.username, "--server", "https://127.0.0.1:9443", "-n", "ci")
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    api = config.new_client_from_config(config_file=str(path))
    configuration = api.configuration
    assert configuration.host == "https://127.0.0.1:9443"
    assert configuration.verify_ssl
    token = Token.objects.get(user=user).key
    assert configuration.auth_settings()["BearerToken"]["value"] == f"Bearer {token}"
    with open(configuration.ssl_ca_cert, "rb") as ca:
        assert ca.read() == (data_dir / "tls/ca.crt").read_bytes()
    assert config.list_kube_config_contexts(str(path))[1]["context"]["namespace"] == "ci"
    assert isinstance(client.VersionApi(api), client.VersionApi)


def test_the_defaults_and_the_shape(data_dir, user):
    document = yaml.safe_load(kubeconfig("--user", user.username))
    cluster = document["clusters"][0]["cluster"]
    assert cluster["server"] == "https://127.0.0.1:8000"
    ca = base64.b64decode(cluster["certificate-authority-data"])
    assert ca == (data_dir / "tls/ca.crt").read_bytes()
    assert document["current-context"] == document["contexts"][0]["name"]
    assert "namespace" not in document["contexts"][0]["context"]
    assert stat.S_IMODE((data_dir / "tls/ca.key").stat().st_mode) == 0o600


def test_the_token_is_made_once_and_reused(data_dir, user):
    first = yaml.safe_load(kubeconfig("--user", user.username))["users"][0]["user"]["token"]
    second = yaml.safe_load(kubeconfig("--user", user.username))["users"][0]["user"]["token"]
    assert first == second == Token.objects.get(user=user).key


def test_the_ca_is_the_one_the_server_certificate_is_signed_with(data_dir, user):
    files = tls.ensure_server_cert(tls.data_dir_paths(), tls.server_hosts("127.0.0.1"))
    document = yaml.safe_load(kubeconfig("--user", user.username))
    ca = base64.b64decode(document["clusters"][0]["cluster"]["certificate-authority-data"])
    from cryptography import x509

    assert tls.signed_by(
        x509.load_pem_x509_certificate(files.cert.read_bytes()), x509.load_pem_x509_certificate(ca)
    )


def test_an_unknown_user_is_refused_without_create_user(data_dir, django_user_model):
    with pytest.raises(CommandError, match='user "nobody" does not exist; pass --create-user'):
        kubeconfig("--user", "nobody")
    assert not django_user_model.objects.filter(username="nobody").exists()


def test_create_user_makes_a_user_without_password_or_privilege(data_dir, django_user_model):
    document = yaml.safe_load(kubeconfig("--user", "newbie", "--create-user"))
    made = django_user_model.objects.get(username="newbie")
    assert not made.has_usable_password() and not made.is_staff and not made.is_superuser
    assert document["users"] == [{"name": "newbie", "user": {"token": made.auth_token.key}}]
