"""Models of the workspaces app (added by the issues that build it)."""
