from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db


def test_bootstrap_admin_creates_a_superuser_once_and_prints_a_working_token(client):
    out = StringIO()
    call_command("bootstrap_admin", stdout=out)
    text = out.getvalue()
    password = text.split("password: ")[1].split()[0]
    user = get_user_model().objects.get(username="admin")
    assert user.is_superuser and user.check_password(password)
    token = Token.objects.get(user=user).key
    assert token in text
    again = StringIO()
    call_command("bootstrap_admin", stdout=again)
    assert "password unchanged" in again.getvalue() and token in again.getvalue()
    assert client.get("/apis", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200


def test_the_curl_hint_names_the_port_and_address_up_serves_on():
    out = StringIO()
    call_command("bootstrap_admin", "--port", "8123", stdout=out)
    assert "https://127.0.0.1:8123/apis" in out.getvalue()
    assert ":8000" not in out.getvalue()
    wild = StringIO()
    call_command("bootstrap_admin", "--port", "9000", "--bind", "0.0.0.0", stdout=wild)
    assert "https://127.0.0.1:9000/apis" in wild.getvalue()


def test_make_demo_passes_its_port_to_the_hint():
    from pathlib import Path

    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    assert "manage.py bootstrap_admin --port $(PORT)" in makefile
