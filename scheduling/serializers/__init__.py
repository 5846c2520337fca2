"""Strict serializers of the scheduling kinds' bodies (Runtime and Run spec/status)."""

from .affinity import (
    TOPOLOGY_RUNTIME_POD,
    WORKSPACE_API_GROUP,
    WORKSPACE_KIND,
    RunAffinitySerializer,
    RunWorkspaceReferenceSerializer,
)
from .common import (
    ArtifactRefSerializer,
    ArtifactStoreSerializer,
    ResourceListField,
    parse_quantity,
)
from .run import RunSpecSerializer
from .run_status import RUN_CONDITION_TYPES, RunStatusSerializer
from .runtime import (
    DEFAULT_PORT,
    DEFAULT_RUNS_CAPACITY,
    RuntimeSpecSerializer,
    RuntimeStatusSerializer,
    workspace_volume_source,
)

__all__ = [
    "DEFAULT_PORT",
    "DEFAULT_RUNS_CAPACITY",
    "RUN_CONDITION_TYPES",
    "TOPOLOGY_RUNTIME_POD",
    "WORKSPACE_API_GROUP",
    "WORKSPACE_KIND",
    "ArtifactRefSerializer",
    "ArtifactStoreSerializer",
    "ResourceListField",
    "RunAffinitySerializer",
    "RunSpecSerializer",
    "RunStatusSerializer",
    "RunWorkspaceReferenceSerializer",
    "RuntimeSpecSerializer",
    "RuntimeStatusSerializer",
    "parse_quantity",
    "workspace_volume_source",
]
