"""``WriteContext``: who writes, and how (dry run, the grants already checked). Every write
through the store carries one; ``portal.machinery.admission`` authorizes with it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from portal.auth.attributes import UserInfo

# (verb, kind key, subresource, namespace, name)
Grant = tuple[str, str, str, str, str]


@dataclass(frozen=True)
class WriteContext:
    """Who writes (a Django user or a ``UserInfo``) and how."""

    user: Any
    dry_run: bool = False
    granted: frozenset[Grant] = frozenset()
    # the field manager its changes are recorded for (metadata.managedFields); "" for the
    # server's own writers (managed_fields.DEFAULT_MANAGER)
    field_manager: str = ""

    @property
    def user_info(self) -> UserInfo:
        return UserInfo.of(self.user)
