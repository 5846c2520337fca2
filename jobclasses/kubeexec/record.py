"""The execution's record in the cluster: what a driver that lost its directory (a control
worker rescheduled, its emptyDir gone) needs to go on without running any step twice.

Two places, both owned by the execution's batch Job:

- The batch Job's annotation ``execution.ayatori.ddupan.top/record``: one JSON object, the
  driver's ``result.json`` without the outputs (``phase``, ``message``, ``startTime``,
  ``completionTime``, ``prepared`` — the checkout and the step scripts are in the pod — and
  ``steps``: ``name``, ``status``, ``exitCode``, ``startedAt``, ``finishedAt``). The driver
  merge-patches it at every change of the result, a step's Running *before* its exec.
- The pod's ``/steps/.run/<NN>/`` per step started (``pid``, ``log``, ``exit``): the step
  runs detached from the exec that started it, so it outlives its driver; ``mkdir`` of the
  directory is the once-only start, and ``exit`` is written when the step ends.

A re-attached driver takes the annotation's step statuses and follows (never restarts) a
step the annotation says Running; the pod's ``exit`` has the last word on it.
"""

from __future__ import annotations

import json
from typing import Any

from .manifest import RECORD_ANNOTATION

RECORDED_KEYS = ("phase", "message", "startTime", "completionTime", "prepared", "steps")


def encode(result: dict[str, Any]) -> str:
    return json.dumps({key: result.get(key) for key in RECORDED_KEYS}, separators=(",", ":"))


def of(job: dict[str, Any]) -> dict[str, Any] | None:
    """The record on a batch Job (None: none yet, or unreadable)."""
    text = ((job.get("metadata") or {}).get("annotations") or {}).get(RECORD_ANNOTATION)
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        return None
    return data


# The step runs in its own session (setsid), so an exec closed by a dying driver does not end
# it; the exec follows its log until ``exit`` appears. $1: the step's state dir, $2: its run.
STEP_SCRIPT = """d="$1"
mkdir -p "${d%/*}"
if mkdir "$d" 2>/dev/null; then
  setsid sh -c 'echo $$ > "$1/pid"; sh -ec "$2" > "$1/log" 2>&1 < /dev/null
    echo $? > "$1/exit.part"; mv "$1/exit.part" "$1/exit"' step "$d" "$2" \
    > /dev/null 2>&1 < /dev/null &
fi
sent=0
while :; do
  ended=0; [ -e "$d/exit" ] && ended=1
  if [ -e "$d/log" ]; then
    size=$(wc -c < "$d/log")
    if [ "$size" -gt "$sent" ]; then
      tail -c +$((sent + 1)) "$d/log" | head -c $((size - sent)); sent=$size
    fi
  fi
  [ "$ended" = 1 ] && exit "$(cat "$d/exit")"
  sleep 0.1
done
"""

# Cancel and timeout: the step's process group, TERM then KILL after 2 s.
KILL_SCRIPT = """p=$(cat "$1/pid" 2>/dev/null) || exit 0
kill -s TERM -- "-$p" 2>/dev/null || exit 0
i=0
while kill -s 0 -- "-$p" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
kill -s KILL -- "-$p" 2>/dev/null
exit 0
"""
