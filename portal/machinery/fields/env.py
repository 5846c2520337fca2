"""corev1.EnvVar: the one environment variable name rule, and the name/value serializer.

Kubernetes takes any printable ASCII other than ``=`` as a name since
RelaxedEnvironmentVariableValidation (alpha in 1.30, on by default from 1.32); that is the rule
here. ``portable=True`` is the rule Kubernetes had before (``IsEnvVarName``: letters, digits,
``_``, ``-``, ``.``, no leading digit), for names that must also work as the keys of a Secret
and on older clusters.
"""

from __future__ import annotations

import re
from typing import Any

from .. import errors
from ..errors import FieldError
from ..serializers import StrictCharField, StrictSerializer
from .names import checked

_NAME = re.compile(r"[\x20-\x3c\x3e-\x7e]+")
_PORTABLE_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
NAME_MESSAGE = (
    "a valid environment variable name must consist only of printable ASCII characters "
    "other than '='"
)
PORTABLE_NAME_MESSAGE = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', "
    "'-', or '.', and must not start with a digit"
)


def env_var_name_errors(name: str, *, portable: bool = False) -> list[str]:
    """Why ``name`` is not an environment variable name ([] if it is)."""
    if portable:
        return [] if _PORTABLE_NAME.fullmatch(name) else [PORTABLE_NAME_MESSAGE]
    return [] if _NAME.fullmatch(name) else [NAME_MESSAGE]


def duplicate_name_causes(env: Any, path: str = "") -> list[FieldError]:
    """A Duplicate value at each variable of the list ``env`` (at ``path``) whose name an
    earlier one already has."""
    if not isinstance(env, list):
        return []
    causes, seen = [], set()
    for index, var in enumerate(env):
        name = var.get("name") if isinstance(var, dict) else None
        if isinstance(name, str) and name in seen:
            causes.append(errors.duplicate(f"{path}[{index}].name", name))
        if isinstance(name, str):
            seen.add(name)
    return causes


# One ``name``/``value`` pair; a kind that takes ``valueFrom`` or needs ``portable`` names
# subclasses it. (No docstring: a serializer's docstring becomes its CRD description.)
class EnvVarSerializer(StrictSerializer):
    portable_names = False

    name = StrictCharField(
        help_text='The variable\'s name: printable ASCII other than "=" (unique within the list).'
    )
    value = StrictCharField(
        help_text="The variable's value; empty when left out.", required=False, allow_blank=True
    )

    def validate_name(self, value: str) -> str:
        return checked(value, env_var_name_errors(value, portable=self.portable_names))
