"""Runtime Pod providers keep RuntimePod rows true: ``local`` (processes here) and
``kubernetes`` (Deployments read through the kubernetes client)."""
