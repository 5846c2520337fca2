"""Relative slash-separated paths (a file of a checkout, a working directory)."""

from __future__ import annotations


def relative_path_errors(value: str, *, allow_dot_segments: bool = False) -> list[str]:
    """A relative slash-separated path. Without ``allow_dot_segments``: no empty, ``.`` or
    ``..`` segment; with it only ``..`` segments are refused (``./run.sh`` is fine)."""
    if value.startswith("/"):
        return ["must be a relative path"]
    segments = value.split("/")
    if allow_dot_segments:
        return ["must not contain a '..' segment"] if ".." in segments else []
    if any(segment in ("", ".", "..") for segment in segments):
        return ["must not contain empty, '.' or '..' segments"]
    return []
