"""Wire shapes of the rbac.authorization.k8s.io/v1 kinds."""

from __future__ import annotations

from rest_framework import serializers

from portal.machinery import errors
from portal.machinery.serializers import StrictSerializer, field_error

RBAC_GROUP = "rbac.authorization.k8s.io"

VERBS_HINT = "get, list, watch, create, update, patch, delete, deletecollection, use, or *"


class PolicyRuleSerializer(StrictSerializer):
    apiGroups = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False)
    resources = serializers.ListField(child=serializers.CharField(), required=False)
    verbs = serializers.ListField(child=serializers.CharField(), allow_empty=False)
    resourceNames = serializers.ListField(child=serializers.CharField(), required=False)
    nonResourceURLs = serializers.ListField(child=serializers.CharField(), required=False)

    def validate(self, attrs):
        if attrs.get("resources") and "apiGroups" not in attrs:
            raise serializers.ValidationError(
                {
                    "apiGroups": field_error(
                        "resource rules must supply at least one api group", "FieldValueRequired"
                    ).detail
                }
            )
        if not attrs.get("resources") and not attrs.get("nonResourceURLs"):
            raise serializers.ValidationError(
                {
                    "resources": field_error(
                        "rules must supply resources or nonResourceURLs", "FieldValueRequired"
                    ).detail
                }
            )
        return attrs


class RoleRefSerializer(StrictSerializer):
    apiGroup = serializers.ChoiceField(choices=[RBAC_GROUP])
    kind = serializers.ChoiceField(choices=["Role", "ClusterRole"])
    name = serializers.CharField()


class SubjectSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=["User", "Group", "ServiceAccount"])
    name = serializers.CharField()
    namespace = serializers.CharField(required=False, allow_blank=True)
    apiGroup = serializers.CharField(required=False, allow_blank=True)

    def validate(self, attrs):
        # Kubernetes defaults User/Group subjects to the RBAC group; ServiceAccounts have none.
        expected = "" if attrs["kind"] == "ServiceAccount" else RBAC_GROUP
        attrs.setdefault("apiGroup", expected)
        if attrs["apiGroup"] == "" and expected:
            attrs["apiGroup"] = expected
        if attrs["apiGroup"] != expected:
            raise serializers.ValidationError(
                {
                    "apiGroup": field_error(
                        f'must be "{expected}" for a {attrs["kind"]} subject',
                        "FieldValueNotSupported",
                    ).detail
                }
            )
        if attrs["kind"] != "ServiceAccount" and attrs.get("namespace"):
            raise serializers.ValidationError(
                {
                    "namespace": field_error(
                        f"a {attrs['kind']} subject has no namespace", "FieldValueForbidden"
                    ).detail
                }
            )
        return attrs


def cluster_binding_rules(new: dict, old: dict | None) -> list:
    """A ClusterRoleBinding grants only a ClusterRole, to ServiceAccounts named with their
    namespace (a RoleBinding defaults a ServiceAccount's namespace to its own)."""
    causes = []
    if (new.get("roleRef") or {}).get("kind") != "ClusterRole":
        causes.append(
            errors.not_supported(
                "roleRef.kind", (new.get("roleRef") or {}).get("kind"), ["ClusterRole"]
            )
        )
    for index, subject in enumerate(new.get("subjects") or []):
        if subject.get("kind") == "ServiceAccount" and not subject.get("namespace"):
            causes.append(errors.required(f"subjects[{index}].namespace"))
    return causes
