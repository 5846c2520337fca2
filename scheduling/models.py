"""Models of the scheduling app (added by the issues that build it)."""
