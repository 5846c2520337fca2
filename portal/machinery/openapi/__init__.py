"""OpenAPI for Kubernetes clients, from the serializers that validate.

``fields`` turns a DRF field or serializer into a schema; drf-spectacular's ``/api/schema/``
(through ``portal.machinery.schema``), the ``/openapi/v3`` documents kubectl reads and the CRDs
(``crds``) all call it, so none of them can drift from what the server accepts."""
