"""Models of the jobclasses app (added by the issues that build it)."""
