"""Run change list filters whose choices come from small tables, not from the Run table."""

from __future__ import annotations

from portal.resource_admin.scale import ChoicesFromTable
from scheduling.models import Runtime


class RuntimeFilter(ChoicesFromTable):
    title = "runtime"
    parameter_name = "runtime__exact"
    column = "runtime"

    def choices_from(self) -> list[str]:
        return list(
            Runtime.objects.order_by("name").values_list("name", flat=True).distinct()[:500]
        )
