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
