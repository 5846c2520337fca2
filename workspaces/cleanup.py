def reconcile(now, namespace=None):
    return {}
