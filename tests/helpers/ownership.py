"""Owners and dependents for the deletion tests: a Gadget owner, a Widget's ``ownerReferences``
pointing at it, and the Widget names left. One builder, so the cascade tests (deletion, gc
queue, DeleteOptions) all describe an owner the same way the garbage collector reads it."""

from __future__ import annotations

from tests.helpers.api import API_VERSION, gadgets, widget, widgets


def gadget(client, name: str = "owner") -> dict:
    """A Gadget created through the API, as the server answered it (with its uid)."""
    manifest = {
        "apiVersion": API_VERSION,
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": {"size": 1},
    }
    return client.post(gadgets(), manifest, format="json").json()


def owned_by(owner: dict, **extra) -> dict:
    """``metadata.ownerReferences`` naming ``owner`` (``extra``: blockOwnerDeletion etc.)."""
    meta = owner["metadata"]
    reference = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        **extra,
    }
    return {"metadata": {"ownerReferences": [reference]}}


def child_of(owner: dict, name: str = "child", **meta) -> dict:
    """A Widget manifest owned by ``owner``, with more ``metadata`` if given."""
    return widget(name, metadata={**owned_by(owner)["metadata"], **meta})


def names(client, namespace: str = "default") -> list[str]:
    """The Widgets left in ``namespace``."""
    return [i["metadata"]["name"] for i in client.get(widgets(namespace)).json()["items"]]
