"""The function invoke gateway: ``POST /v1/namespaces/{ns}/runs/{name}/{uid}/invoke``.

A raw ASGI handler in front of the portal's Django application (``portal.asgi``): it
authenticates with the portal's own tokens, authorizes ``create`` on ``runs/invoke``, routes by
an in-memory ownership cache the watch hub keeps current, and forwards the call once over gRPC
(``executor.v1.FunctionRuntime/InvokeFunction``) to the runtimed that serves the Run. No
Django view, no database read and no history row per invocation in the steady state: the
invoke path is the hot path of an agent's loop. docs/function-gateway.md is the contract.
"""
