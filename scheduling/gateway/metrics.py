"""Prometheus metrics of the function gateway: bounded counters, never a label a caller
chooses (codes are HTTP status codes and gRPC code names the gateway itself produces)."""

from __future__ import annotations

from prometheus_client import Counter

INVOCATIONS = Counter(
    "kruntimes_function_invocations_total",
    "Invoke requests the function gateway answered, by HTTP status code.",
    ["code"],
)
UPSTREAM_ERRORS = Counter(
    "kruntimes_function_invoke_upstream_errors_total",
    "Invocations a runtimed's dataplane answered with a gRPC error, by gRPC code.",
    ["grpc_code"],
)

_answered: dict[int, object] = {}


def answered(code: int) -> None:
    """Count one answer (the labelled child is looked up once per code)."""
    child = _answered.get(code)
    if child is None:
        child = _answered[code] = INVOCATIONS.labels(code=str(code))
    child.inc()  # type: ignore[attr-defined]


def upstream_error(code_name: str) -> None:
    UPSTREAM_ERRORS.labels(grpc_code=code_name).inc()
