"""``Authorization: Bearer <token>`` with DRF's own tokens (``Token <key>`` works too)."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication, get_authorization_header

KEYWORDS = (b"bearer", b"token")


class BearerTokenAuthentication(TokenAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        auth = get_authorization_header(request).split()
        if not auth or auth[0].lower() not in KEYWORDS:
            return None
        if len(auth) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header: expected one token.")
        try:
            token = auth[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid token header.") from None
        return self.authenticate_credentials(token)
