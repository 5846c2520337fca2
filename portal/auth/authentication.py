"""``Authorization: Bearer <token>`` with DRF's own tokens (``Token <key>`` works too)."""

from __future__ import annotations

from rest_framework.authentication import TokenAuthentication, get_authorization_header


class BearerTokenAuthentication(TokenAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        auth = get_authorization_header(request).split()
        if auth and auth[0].lower() == b"token":
            auth[0] = b"Bearer"
            request.META["HTTP_AUTHORIZATION"] = b" ".join(auth).decode("latin-1")
        return super().authenticate(request)
