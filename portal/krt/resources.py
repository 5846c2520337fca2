"""The kinds ``krt get`` knows, by the names kubectl users type (plural, singular, short)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from .errors import KrtError

KRUNTIMES = "kruntimes.io"
EXECUTION = "execution.ayatori.ddupan.top"
VERSION = "v1alpha1"


@dataclass(frozen=True)
class Resource:
    plural: str
    kind: str
    group: str = KRUNTIMES
    version: str = VERSION
    namespaced: bool = True
    aliases: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``run.kruntimes.io``: what ``-o name`` prints before the slash."""
        singular = self.kind.lower()
        return f"{singular}.{self.group}" if self.group else singular

    def path(self, namespace: str | None, name: str = "", subresource: str = "") -> str:
        """``/apis/<group>/<version>[/namespaces/<ns>]/<plural>[/<name>[/<sub>]]``;
        ``namespace`` None lists across namespaces."""
        parts = ["/apis", self.group, self.version] if self.group else ["/api", self.version]
        if self.namespaced and namespace is not None:
            parts += ["namespaces", quote(namespace, safe="")]
        parts.append(self.plural)
        if name:
            parts.append(quote(name, safe=""))
        if subresource:
            parts.append(subresource)
        return "/".join(parts)


RUNS = Resource("runs", "Run", aliases=("run", "rn"))
WORKFLOW_RUNS = Resource("workflowruns", "WorkflowRun", aliases=("workflowrun", "wfr"))
WORKFLOWS = Resource("workflows", "Workflow", aliases=("workflow", "wf"))
RESOURCES = (
    RUNS,
    WORKFLOW_RUNS,
    WORKFLOWS,
    Resource("runtimes", "Runtime", aliases=("runtime", "rt")),
    Resource("runtimepods", "RuntimePod", aliases=("runtimepod",)),
    Resource("persistentworkspaces", "PersistentWorkspace", aliases=("persistentworkspace", "pw")),
    Resource("actions", "Action", aliases=("action",)),
    Resource("jobs", "Job", group=EXECUTION, aliases=("job",)),
    Resource("jobclasses", "JobClass", group=EXECUTION, namespaced=False, aliases=("jobclass",)),
    Resource("events", "Event", group="", version="v1", aliases=("event", "ev")),
)


def lookup(word: str) -> Resource:
    word = word.lower()
    for resource in RESOURCES:
        if word == resource.plural or word in resource.aliases:
            return resource
    known = ", ".join(r.plural for r in RESOURCES)
    raise KrtError(f'unknown resource type "{word}" (known: {known})')
