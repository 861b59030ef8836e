"""When the kubelet restarts a pod's containers in place, and where a restarting pod stands at a time.

Upstream's kubelet restarts exited containers in the same pod for ``restartPolicy: Always`` (any
exit) and ``OnFailure`` (a non-zero exit), with the container back-off of pkg/kubelet/kuberuntime
``doBackOff`` over the kubelet's ``flowcontrol.Backoff`` (``backOffPeriod`` 10 s, ``MaxContainerBackOff``
5 min): the first restart is at once (no back-off entry yet), each later one waits in
``CrashLoopBackOff`` 10 s doubled per restart, at most 5 min; a container that ran longer than twice
the maximum (``hasExpired``: 10 min) starts over, at once. A simulated container runs exactly its
``drasched.io/sim-duration`` each time, so the back-off either always starts over (a run longer than
10 min) or never does, and the delay depends only on the restart count.

Which pods restart is :func:`restarts_in_place`; a pod's place on its restart timeline at any
virtual time is :func:`advance` (pure: the simulated kubelet writes what it returns), which skips
whole cycles once they repeat (:func:`settled`), so a pod looked at after a long quiet stretch costs
no more than one looked at on time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

Obj = dict[str, Any]

INITIAL_BACKOFF = timedelta(seconds=10)
MAX_BACKOFF = timedelta(minutes=5)
BACKOFF_RESET = 2 * MAX_BACKOFF
"""flowcontrol.Backoff ``hasExpired``: a run longer than this starts the back-off over."""


def restart_delay(restarts: int, ran: timedelta) -> timedelta:
    """The back-off before restart number ``restarts + 1``, after a run of ``ran``."""
    if restarts <= 0 or ran > BACKOFF_RESET:
        return timedelta(0)
    return min(INITIAL_BACKOFF * 2 ** min(restarts - 1, 5), MAX_BACKOFF)


def settled(restarts: int, ran: timedelta) -> bool:
    """Whether a pod that restarted ``restarts`` times only repeats its last cycle from now on
    (the same run, the same back-off): at the 5 min cap, or starting over after every run."""
    return restarts >= 1 and restart_delay(restarts, ran) == restart_delay(restarts + 1, ran)


def restarts_in_place(pod: Obj, exit_code: int) -> bool:
    """Whether the kubelet restarts the containers of ``pod`` when they exit with ``exit_code``.

    ``OnFailure``: on a non-zero exit, as upstream. ``Always``: only for a pod a controller owns
    (a ReplicaSet's, StatefulSet's, DaemonSet's...). A bare pod ends ``Succeeded`` (or ``Failed``)
    after its sim-duration whatever its restartPolicy: the API server defaults restartPolicy to
    Always, and on a bare pod the annotation has always meant "its work takes this long" (the
    scenarios' bare pods, ``what-if --default-duration``), which a restart would never end.
    """
    spec = pod.get("spec") or {}
    policy = spec.get("restartPolicy") or "Always"
    if policy == "OnFailure":
        return exit_code != 0
    return policy == "Always" and controller_kind(pod) is not None


def endless(pod: Obj) -> bool:
    """Whether nothing ends the restarts of ``pod``: only a Job counts them (``backoffLimit``)."""
    return controller_kind(pod) != "Job"


def controller_kind(pod: Obj) -> str | None:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("kind") or "")
    return None


@dataclass(frozen=True)
class Run:
    """One run of the containers that ended."""

    started: datetime
    finished: datetime


@dataclass(frozen=True)
class Restarting:
    """Where a pod's containers stand: ``restarts`` so far, running since ``running_since`` or
    (None) waiting in CrashLoopBackOff after ``last``, the last run that ended."""

    restarts: int
    running_since: datetime | None
    last: Run | None = None

    def next_event(self, duration: timedelta) -> datetime:
        """When the containers next exit (running) or start again (waiting)."""
        if self.running_since is not None:
            return self.running_since + duration
        assert self.last is not None
        return self.last.finished + restart_delay(self.restarts, self.last.finished - self.last.started)

    def since(self) -> datetime:
        """When the containers last changed state (started, or exited into their back-off)."""
        if self.running_since is not None:
            return self.running_since
        assert self.last is not None
        return self.last.finished


def advance(state: Restarting, duration: timedelta, now: datetime) -> Restarting:
    """Where ``state`` stands at ``now`` when every run lasts ``duration``."""
    duration = max(duration, timedelta(0))
    while state.next_event(duration) <= now:
        if state.running_since is None:  # the back-off is over: the containers start again
            assert state.last is not None
            state = Restarting(state.restarts + 1, state.next_event(duration), state.last)
            state = _skip_cycles(state, duration, now)
            continue
        run = Run(state.running_since, state.running_since + duration)
        if restart_delay(state.restarts, duration):
            state = Restarting(state.restarts, None, run)
        else:
            state = _skip_cycles(Restarting(state.restarts + 1, run.finished, run), duration, now)
    return state


def _skip_cycles(state: Restarting, duration: timedelta, now: datetime) -> Restarting:
    """Whole repeating cycles (run, then the same back-off) that end by ``now``, in one step."""
    if state.running_since is None or not settled(state.restarts, duration):
        return state
    period = duration + restart_delay(state.restarts, duration)
    cycles = (now - state.running_since) // period
    if cycles < 1:
        return state
    started = state.running_since + (cycles - 1) * period
    return Restarting(state.restarts + cycles, started + period, Run(started, started + duration))
