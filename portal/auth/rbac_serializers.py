"""Wire shapes of the rbac.authorization.k8s.io/v1 kinds."""

from __future__ import annotations

from rest_framework import serializers

from portal.machinery.serializers import StrictSerializer, field_error

VERBS_HINT = "get, list, watch, create, update, patch, delete, deletecollection, use, or *"


class PolicyRuleSerializer(StrictSerializer):
    apiGroups = serializers.ListField(child=serializers.CharField(allow_blank=True),
                                      required=False)
    resources = serializers.ListField(child=serializers.CharField(), required=False)
    verbs = serializers.ListField(child=serializers.CharField(), allow_empty=False)
    resourceNames = serializers.ListField(child=serializers.CharField(), required=False)
    nonResourceURLs = serializers.ListField(child=serializers.CharField(), required=False)

    def validate(self, attrs):
        if attrs.get("resources") and "apiGroups" not in attrs:
            raise serializers.ValidationError(
                {"apiGroups": [field_error("resource rules must supply at least one api group",
                                           "FieldValueRequired").detail]})
        if not attrs.get("resources") and not attrs.get("nonResourceURLs"):
            raise serializers.ValidationError(
                {"resources": [field_error("rules must supply resources or nonResourceURLs",
                                           "FieldValueRequired").detail]})
        return attrs


class RoleRefSerializer(StrictSerializer):
    apiGroup = serializers.ChoiceField(choices=["rbac.authorization.k8s.io"])
    kind = serializers.ChoiceField(choices=["Role", "ClusterRole"])
    name = serializers.CharField()


class SubjectSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=["User", "Group", "ServiceAccount"])
    name = serializers.CharField()
    namespace = serializers.CharField(required=False, allow_blank=True)
    apiGroup = serializers.CharField(required=False, allow_blank=True)

    def validate(self, attrs):
        if attrs["kind"] == "ServiceAccount" and not attrs.get("namespace"):
            raise serializers.ValidationError(
                {"namespace": [field_error("a ServiceAccount subject needs a namespace",
                                           "FieldValueRequired").detail]})
        return attrs
