"""Models of the workflows app (added by the issues that build it)."""
