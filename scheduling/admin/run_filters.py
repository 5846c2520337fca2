"""The Run list's phase filter: only the phases Runs can reach. ``Ready`` is a function-mode
phase (a Run serving); it is offered only while some function-mode Run exists."""

from __future__ import annotations

from django.contrib import admin

from scheduling.models import Run, RunPhase


def reachable_phases(queryset) -> list[str]:
    phases = [phase for phase in RunPhase.values if phase != RunPhase.READY]
    if queryset.filter(spec__mode__has_key="function").exists():
        phases.insert(phases.index(RunPhase.SUCCEEDED), RunPhase.READY)
    return phases


class RunPhaseFilter(admin.SimpleListFilter):
    title = "phase"
    parameter_name = "phase__exact"  # the URL the plain "phase" filter used

    def lookups(self, request, model_admin):
        return [(phase, phase) for phase in reachable_phases(Run.objects.all())]

    def queryset(self, request, queryset):
        return queryset.filter(phase=self.value()) if self.value() else queryset
