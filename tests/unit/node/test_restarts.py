"""The kubelet's restarts in place: upstream's container back-off and a restarting pod's timeline."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from drasched.node.restarts import (
    Restarting,
    Run,
    advance,
    endless,
    restart_delay,
    restarts_in_place,
    settled,
)

T0 = datetime(2026, 1, 1)
S = timedelta(seconds=1)


def test_back_off_starts_at_once_then_doubles_from_10s_to_5m() -> None:
    # kuberuntime doBackOff over flowcontrol.Backoff(10s, 300s): no entry before the first restart
    assert [restart_delay(n, 90 * S).total_seconds() for n in range(9)] == [0, 10, 20, 40, 80, 160, 300, 300, 300]
    assert restart_delay(10_000, 90 * S) == 300 * S  # no overflow on a long history


def test_a_run_longer_than_10_minutes_starts_the_back_off_over() -> None:
    # flowcontrol hasExpired: eventTime - lastUpdate > 2 * maxDuration
    assert restart_delay(5, 601 * S) == timedelta(0)
    assert restart_delay(5, 600 * S) == 160 * S


@pytest.mark.parametrize(("ran", "first"), [(90 * S, 6), (0 * S, 6), (600 * S, 6), (601 * S, 1), (3600 * S, 1)])
def test_the_cycle_settles_at_the_cap_or_at_the_first_restart_of_a_long_run(ran: timedelta, first: int) -> None:
    assert [n for n in range(10) if settled(n, ran)] == list(range(first, 10))


def test_advance_walks_the_restart_timeline() -> None:
    start = Restarting(0, T0)
    d = 90 * S
    assert advance(start, d, T0 + 89 * S) == start
    first = advance(start, d, T0 + 90 * S)  # restarted at once
    assert first == Restarting(1, T0 + 90 * S, Run(T0, T0 + 90 * S))
    waiting = advance(first, d, T0 + 185 * S)  # exited at 180s, back-off 10s
    assert waiting == Restarting(1, None, Run(T0 + 90 * S, T0 + 180 * S))
    assert waiting.next_event(d) == T0 + 190 * S
    assert advance(waiting, d, T0 + 190 * S) == Restarting(2, T0 + 190 * S, Run(T0 + 90 * S, T0 + 180 * S))


def _step_by_step(state: Restarting, d: timedelta, until: datetime) -> Restarting:
    while state.next_event(d) <= until:
        state = advance(state, d, state.next_event(d))
    return state


@pytest.mark.parametrize("seconds", [0, 5, 90, 600, 601, 3600])
@pytest.mark.parametrize("hours", [1, 7, 50])
def test_a_late_look_lands_where_looking_at_every_event_would(seconds: int, hours: int) -> None:
    d, until = seconds * S, T0 + timedelta(hours=hours, seconds=7)
    state = Restarting(0, T0)
    assert advance(state, d, until) == _step_by_step(state, d, until)


def test_a_negative_duration_exits_at_once() -> None:
    assert advance(Restarting(0, T0), -60 * S, T0).restarts == 1


def _pod(policy: str | None, owner: str | None) -> dict[str, Any]:
    refs = [{"apiVersion": "apps/v1", "kind": owner, "name": "o", "uid": "u", "controller": True}] if owner else []
    return {"metadata": {"name": "p", "ownerReferences": refs},
            "spec": {"restartPolicy": policy} if policy else {}}


@pytest.mark.parametrize(("policy", "owner", "exit_code", "restarts"), [
    ("Always", "ReplicaSet", 0, True),
    ("Always", "StatefulSet", 1, True),
    ("Always", "DaemonSet", 0, True),
    ("Always", None, 0, False),  # a bare pod ends: sim-duration is how long its work takes
    (None, None, 0, False),
    ("OnFailure", "Job", 1, True),
    ("OnFailure", "Job", 0, False),
    ("OnFailure", None, 3, True),
    ("Never", "Job", 1, False),
])
def test_which_pods_restart_in_place(policy: str | None, owner: str | None, exit_code: int, restarts: bool) -> None:
    assert restarts_in_place(_pod(policy, owner), exit_code) is restarts


def test_only_a_job_ends_restarts() -> None:
    assert not endless(_pod("OnFailure", "Job"))
    assert endless(_pod("OnFailure", None))
    assert endless(_pod("Always", "ReplicaSet"))
