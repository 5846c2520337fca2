"""A label selector as a database filter on a ``labels`` JSON column, with the semantics of
``Selector.matches`` (the reference: requirements ANDed, ``!=``/NotIn match objects without
the key, label values are strings).

PostgreSQL: ``=``/``in`` are JSONB containment (``labels @> '{"k": "v"}'``) and exists is the
key-exists operator (``labels ? 'k'``), both answered by a GIN index on ``labels``. SQLite:
the same semantics through its JSON functions (no index; slower is fine).
"""

from __future__ import annotations

from django.db import connection
from django.db.models import Q
from django.db.models.fields.json import KeyTextTransform
from django.db.models.lookups import In

from .labels import DOES_NOT_EXIST, EXISTS, NOT_EQUALS, NOT_IN, Requirement, Selector

__all__ = ["selector_q"]


def _value_in(requirement: Requirement, field: str, vendor: str) -> Q:
    values = sorted(requirement.values)
    if vendor == "postgresql":  # containment: the GIN index answers it
        q = Q()
        for value in values:
            q |= Q(**{f"{field}__contains": {requirement.key: value}})
        return q
    return Q(In(KeyTextTransform(requirement.key, field), values))


def selector_q(selector: Selector, field: str = "labels", vendor: str | None = None) -> Q:
    """The rows whose ``field`` the selector matches (a match-nothing selector: none)."""
    vendor = vendor or connection.vendor
    if selector.match_nothing:
        return Q(pk__in=[])
    q = Q()
    for requirement in selector.requirements:
        has_key = Q(**{f"{field}__has_key": requirement.key})
        if requirement.operator == EXISTS:
            q &= has_key
        elif requirement.operator == DOES_NOT_EXIST:
            q &= ~has_key
        elif requirement.operator in (NOT_EQUALS, NOT_IN):
            q &= ~has_key | ~_value_in(requirement, field, vendor)
        else:  # Equals, In
            q &= _value_in(requirement, field, vendor)
    return q
