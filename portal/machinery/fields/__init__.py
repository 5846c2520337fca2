"""Generic field types of Kubernetes-shaped bodies, shared by every kind.

One module per family: ``bounded`` (item and property counts), ``times`` (durations and
metav1.Time), ``paths``, ``quantities``, ``conditions``, ``selectors``, ``names`` (DNS names and
label values), ``env`` (corev1.EnvVar). The strict JSON primitives they build on are
``portal.machinery.serializers``; kind-specific shapes stay with their app.
"""
