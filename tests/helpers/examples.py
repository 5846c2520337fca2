"""How hard Hypothesis searches: the whole budget in ``make test`` (profile ``full``), a tenth
(at least 10 examples) in ``make test-fast`` (``HYPOTHESIS_PROFILE=dev``)."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("full")
settings.register_profile("dev", max_examples=10)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "full")
settings.load_profile(PROFILE)


def examples(budget: int) -> int:
    """``max_examples`` for a test whose full search is ``budget`` examples."""
    return budget if PROFILE == "full" else max(10, budget // 10)
