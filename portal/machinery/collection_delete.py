"""DELETE on a collection (``deletecollection``), as kube-apiserver's ``Store.DeleteCollection``:
list what the selectors match, then delete each item with the request's DeleteOptions (a dry
run deletes nothing). The one ``deletecollection`` grant covers every item's delete; an item
already gone is no error, and the first other failure is reported once all were tried."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from . import errors, store
from .admission import WriteContext, authorize
from .delete_options import DeleteOptions
from .listing import list_objects
from .registry import ResourceKind

LIST_ONLY = ("limit", "continue")  # the whole selection is deleted, never one page of it


def delete_collection(
    kind: ResourceKind,
    namespace: str | None,
    params: Mapping[str, str],
    options: DeleteOptions,
    context: WriteContext,
) -> list[Any]:
    """The objects the selectors matched, each as its delete left it (or would leave it)."""
    context = authorize(context, kind, "deletecollection", namespace)
    selection = {k: v for k, v in params.items() if k not in LIST_ONLY}
    matched, _ = list_objects(kind, namespace, selection)
    context = dataclasses.replace(context, dry_run=bool(options.dry_run))
    deleted: list[Any] = []
    failure: errors.StatusError | None = None
    for obj in matched:
        item_namespace = getattr(obj, "namespace", None) if kind.namespaced else None
        grant = ("delete", kind.key, "", item_namespace or "", obj.name)
        try:
            result, _ = store.delete(
                kind,
                item_namespace,
                obj.name,
                propagation=options.propagation,
                preconditions=options.preconditions,
                context=dataclasses.replace(context, granted=context.granted | {grant}),
            )
        except errors.StatusError as exc:
            if exc.code != 404:
                failure = failure or exc
            continue
        deleted.append(result)
    if failure is not None:
        raise failure
    return deleted
