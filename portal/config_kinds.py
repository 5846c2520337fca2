"""v1 Secret and ConfigMap: their body fields and Kubernetes' validation of them.

Every rule here runs on every writer's path (the store). A cause may name a key but never
echoes a Secret value: the API, the admin and ``manage.py apply`` all show cause messages.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

from portal.machinery import errors
from portal.machinery.errors import FieldError
from portal.machinery.registry import Column, ResourceKind, registry
from portal.machinery.serializers import StrictBooleanField, StrictCharField, StringMapField
from portal.machinery.validation import max_len_error, regex_error

# k8s.io/apimachinery IsConfigMapKey, and core's MaxSecretSize / MaxConfigMapSize.
CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
CONFIG_KEY_RE = re.compile(CONFIG_KEY_FMT)
CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
CONFIG_KEY_MAX_LENGTH = 253
MAX_SECRET_SIZE = 1024 * 1024
MAX_CONFIG_MAP_SIZE = 1024 * 1024
DEFAULT_SECRET_TYPE = "Opaque"
IMMUTABLE_SET = "field is immutable when `immutable` is set"


def config_key_errors(key: str) -> list[str]:
    found = []
    if len(key) > CONFIG_KEY_MAX_LENGTH:
        found.append(max_len_error(CONFIG_KEY_MAX_LENGTH))
    if not CONFIG_KEY_RE.fullmatch(key):
        found.append(
            regex_error(CONFIG_KEY_MSG, CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name")
        )
    if key == ".":
        found.append("must not be '.'")
    elif key == "..":
        found.append("must not be '..'")
    elif key.startswith(".."):
        found.append("must not start with '..'")
    return found


def decoded(value: str) -> bytes | None:
    """The bytes of a standard, padded base64 string; None when it is not one."""
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None


def _key_causes(field: str, data: Mapping[str, Any]) -> list[FieldError]:
    return [
        errors.invalid(f"{field}[{key}]", message)
        for key in data
        for message in config_key_errors(key)
    ]


def _base64_sizes(field: str, data: Mapping[str, str]) -> tuple[int, list[FieldError]]:
    """Total decoded bytes, and a cause per value that is not base64 (never showing it)."""
    size, causes = 0, []
    for key, value in data.items():
        raw = decoded(value)
        if raw is None:
            causes.append(errors.invalid(f"{field}[{key}]", "must be base64"))
        else:
            size += len(raw)
    return size, causes


def _immutable_causes(new: Mapping[str, Any], old: Mapping[str, Any] | None, fields) -> list:
    if old is None or old.get("immutable") is not True:
        return []
    causes = []
    if new.get("immutable") is not True:
        causes.append(errors.forbidden("immutable", IMMUTABLE_SET))
    for field in fields:
        if (new.get(field) or {}) != (old.get(field) or {}):
            causes.append(errors.forbidden(field, IMMUTABLE_SET))
    return causes


# --- Secret ---------------------------------------------------------------------------


def fold_string_data(body: dict[str, Any], old: Mapping[str, Any] | None) -> dict[str, Any]:
    """``stringData`` is write-only: its values land base64-encoded in ``data`` (over the same
    keys there) and it is never stored; an empty ``type`` is ``Opaque``."""
    data = dict(body.get("data") or {})
    for key, value in (body.get("stringData") or {}).items():
        data[key] = base64.b64encode(value.encode("utf-8")).decode("ascii")
    return {**body, "data": data, "stringData": None, "type": body.get("type") or "Opaque"}


def validate_secret(new: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    data = new.get("data") or {}
    causes = _key_causes("data", data)
    size, value_causes = _base64_sizes("data", data)
    causes += value_causes
    if size > MAX_SECRET_SIZE:
        causes.append(errors.too_long("data", MAX_SECRET_SIZE))
    if old is not None and new.get("type") != old.get("type"):
        causes.append(errors.invalid("type", "field is immutable"))
    return causes + _immutable_causes(new, old, ("data",))


def secret_in_list(manifest: dict[str, Any]) -> dict[str, Any]:
    """A Secret in a list: no values (only a GET of one Secret returns its data), nor its
    keys (which its managedFields name)."""
    listed = {key: value for key, value in manifest.items() if key != "data"}
    meta = listed.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        listed["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return listed


# --- ConfigMap ------------------------------------------------------------------------


def validate_config_map(new: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    data = new.get("data") or {}
    binary = new.get("binaryData") or {}
    causes = _key_causes("data", data) + _key_causes("binaryData", binary)
    size, value_causes = _base64_sizes("binaryData", binary)
    causes += value_causes
    causes += [
        errors.invalid(f"binaryData[{key}]", "duplicate of key present in data")
        for key in binary
        if key in data
    ]
    size += sum(len(value.encode("utf-8", "surrogatepass")) for value in data.values())
    if size > MAX_CONFIG_MAP_SIZE:
        causes.append(errors.too_long("data", MAX_CONFIG_MAP_SIZE))
    return causes + _immutable_causes(new, old, ("data", "binaryData"))


def register_config_kinds() -> None:
    from portal.models import ConfigMap, Secret

    registry.register(
        ResourceKind(
            group="",
            version="v1",
            kind="Secret",
            strategic_merge={},  # data, stringData: maps, merged key by key
            plural="secrets",
            description=(
                "Secret holds a small amount of sensitive data, such as passwords or keys, by "
                "key; stored encrypted when encryption keys are configured."
            ),
            model=Secret,
            body={
                "data": StringMapField(
                    default=dict,
                    help_text="The secret values by key, each base64-encoded; keys are letters, "
                    "digits, '-', '_' or '.'; at most 1 MiB decoded in all. Left out of lists: only "
                    "reading one Secret returns it.",
                ),
                "stringData": StringMapField(
                    required=False,
                    help_text="Write-only plain-text values, merged into data (base64-encoded) "
                    "on write, over data's values for the same keys; never read back.",
                ),
                "type": StrictCharField(
                    default=DEFAULT_SECRET_TYPE,
                    allow_blank=True,
                    help_text="The kind of secret, a hint to the programs that read it (such as "
                    f"kubernetes.io/dockerconfigjson); {DEFAULT_SECRET_TYPE} when left out. "
                    "Cannot be updated.",
                ),
                "immutable": StrictBooleanField(
                    required=False,
                    allow_null=True,
                    help_text="If true, data can no longer change (and immutable stays true); "
                    "only deleting the Secret removes it.",
                ),
            },
            status=None,
            generation_fields=(),
            normalize=fold_string_data,
            validators=(validate_secret,),
            in_list=secret_in_list,
            columns=(
                Column("TYPE", lambda o: o.type),
                Column("DATA", lambda o: len(o.data or {})),
            ),
        )
    )
    registry.register(
        ResourceKind(
            group="",
            version="v1",
            kind="ConfigMap",
            strategic_merge={},  # data, binaryData: maps, merged key by key
            plural="configmaps",
            description=("ConfigMap holds non-confidential configuration data as key-value pairs."),
            model=ConfigMap,
            short_names=("cm",),
            body={
                "data": StringMapField(
                    default=dict,
                    help_text="The configuration values by key, as UTF-8 text; keys are "
                    "letters, digits, '-', '_' or '.' and not also in binaryData.",
                ),
                "binaryData": StringMapField(
                    default=dict,
                    help_text="Binary values by key, each base64-encoded; keys not also in "
                    "data. data and binaryData together hold at most 1 MiB.",
                ),
                "immutable": StrictBooleanField(
                    required=False,
                    allow_null=True,
                    help_text="If true, data and binaryData can no longer change (and "
                    "immutable stays true); only deleting the ConfigMap removes it.",
                ),
            },
            status=None,
            generation_fields=(),
            validators=(validate_config_map,),
            columns=(Column("DATA", lambda o: len(o.data or {}) + len(o.binary_data or {})),),
        )
    )
