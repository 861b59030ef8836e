"""The ``batch/v1`` Job controller of the embedded control plane.

Follows upstream ``pkg/controller/job/job_controller.go`` in what a user sees:

* **Pods.** NonIndexed pods are named ``<job>-<random5>``; Indexed ones ``<job>-<index>-<random5>``
  with the ``batch.kubernetes.io/job-completion-index`` annotation and label, hostname
  ``<job>-<index>`` and the ``JOB_COMPLETION_INDEX`` variable in every container. Every pod
  carries ``batch.kubernetes.io/controller-uid`` / ``batch.kubernetes.io/job-name`` (and the
  legacy ``controller-uid`` / ``job-name``) and a controller ownerReference to the Job.
  Events ``SuccessfulCreate`` / ``SuccessfulDelete`` as upstream.
* **Counting.** ``parallelism`` pods run at once until ``completions`` succeeded (Indexed:
  until every index in ``[0, completions)`` succeeded). A failed pod counts towards
  ``backoffLimit`` unless ``podFailurePolicy`` says ``Ignore`` (``FailJob`` fails the Job at
  once); a pod that vanishes while running counts as failed, as the tracking finalizer makes
  it upstream. Replacements wait the pod-failure back-off: 10s doubled per failure since the
  last success, at most 10 minutes (``DefaultJobPodFailureBackOff``, ``MaxJobPodFailureBackOff``).
* **Ending.** A Job that will fail gets ``FailureTarget`` (reasons ``BackoffLimitExceeded``,
  ``DeadlineExceeded``, ``PodFailurePolicy``), its active pods are deleted, and ``Failed``
  follows once none is left; a Job that will succeed gets ``SuccessCriteriaMet`` then
  ``Complete`` (reason ``CompletionsReached``) and ``completionTime``. ``suspend`` deletes the
  active pods (``Suspended`` condition); resuming resets ``startTime``.
  ``ttlSecondsAfterFinished`` deletes a finished Job (its pods go with it by garbage collection).

The selector and the template labels are the API server's, generated from the Job's uid on
create (:mod:`drasched.api.job_strategy`; the memory store does it too).

Not modelled: the ``batch.kubernetes.io/job-tracking`` finalizer (pods are counted in
memory instead, so a Job loaded with a status counts from the pods it finds),
``backoffLimitPerIndex``, ``successPolicy`` and ``managedBy``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from drasched.api import kinds
from drasched.api.meta import format_time, parse_time
from drasched.controllers.workloads.common import (
    Obj,
    WorkloadBase,
    condition_true,
    is_active,
    is_deleting,
    is_ready,
    is_terminal,
    md,
    owned_by,
    phase,
    pod_from_template,
    set_condition,
    spec_of,
)
from drasched.controllers.workloads.podfailurepolicy import FAIL_JOB, IGNORE, match_pod_failure_policy

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"

DEFAULT_BACKOFF = timedelta(seconds=10)
MAX_BACKOFF = timedelta(minutes=10)

REASON_BACKOFF = "BackoffLimitExceeded"
MESSAGE_BACKOFF = "Job has reached the specified backoff limit"
REASON_DEADLINE = "DeadlineExceeded"
MESSAGE_DEADLINE = "Job was active longer than specified deadline"
REASON_POLICY = "PodFailurePolicy"
REASON_COMPLETIONS = "CompletionsReached"
MESSAGE_COMPLETIONS = "Reached expected number of succeeded pods"


@dataclass
class _Outcome:
    result: str  # "succeeded", "failed" or "ignored"
    index: int | None


@dataclass
class _Tally:
    """What the controller counted of one Job's finished pods (upstream keeps it via finalizers)."""

    outcomes: dict[str, _Outcome] = field(default_factory=dict)
    last_seen: dict[str, Obj] = field(default_factory=dict)
    failures_since_success: int = 0
    last_failure: datetime | None = None
    policy_failure: str | None = None

    def count(self, result: str) -> int:
        return sum(1 for o in self.outcomes.values() if o.result == result)

    def succeeded_indexes(self) -> set[int]:
        return {o.index for o in self.outcomes.values() if o.result == "succeeded" and o.index is not None}


def backoff_remaining(failures: int, last_failure: datetime | None, now: datetime) -> timedelta:
    """How long replacements still wait: 10s doubled per failure since the last success, at most
    10 minutes, counted from the last failure (upstream ``backoffRecord.getRemainingTime``)."""
    if failures == 0 or last_failure is None:
        return timedelta(0)
    delay = DEFAULT_BACKOFF
    for _ in range(1, failures):
        delay = min(delay * 2, MAX_BACKOFF)
    return max(timedelta(0), last_failure + delay - now)


def format_indexes(indexes: set[int]) -> str:
    """Upstream's ``completedIndexes`` text: ``1,3-5,7`` (three or more in a row become a range)."""
    out: list[str] = []
    ordered = sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            out.append(f"{ordered[i]}-{ordered[j]}")
        else:
            out.extend(str(x) for x in ordered[i:j + 1])
        i = j + 1
    return ",".join(out)


def pod_index(pod: Obj) -> int | None:
    text = (md(pod).get("annotations") or {}).get(COMPLETION_INDEX)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def job_finished(job: Obj) -> bool:
    return condition_true(job, "Complete") or condition_true(job, "Failed")


class JobController(WorkloadBase):
    """Runs Jobs to completion on the simulated kubelet's virtual time."""

    name = "job-controller"
    component = "job-controller"
    kind = kinds.JOB
    watched = (kinds.POD,)

    def __init__(self) -> None:
        super().__init__()
        self._tallies: dict[str, _Tally] = {}

    def sync(self, job: Obj) -> bool:
        if job_finished(job):
            return self._expire(job)
        uid = md(job).get("uid", "")
        pods = self._pods_of(uid)
        tally = self._tallies.setdefault(uid, _Tally())
        self._count(job, tally, pods)
        now = self.ctx.now()
        stamp = format_time(now)
        spec = spec_of(job)
        status = copy.deepcopy(job.get("status") or {})
        active = [p for p in pods if is_active(p)]
        terminating = [p for p in pods if is_deleting(p) and not is_terminal(p)]
        wrote = False

        ending = self._ending(job, status, tally, now)
        if ending is not None:
            cond_type, reason, message = ending
            set_condition(status, cond_type, "True", reason, message, stamp)
            if not active and not terminating:  # every pod has stopped: the end is final
                wrote |= self._finish(job, status, cond_type, reason, message, stamp)
            for pod in active:  # deleted pods count as failed once gone, as upstream counts them
                wrote |= self._delete_pod(job, pod)
            active = []
        else:
            wrote |= self._suspend_or_resume(job, status, stamp)
            if not spec.get("suspend"):
                status.setdefault("startTime", stamp)
                active = self._scale(job, status, tally, active, now)
                deadline = spec.get("activeDeadlineSeconds")
                if deadline is not None:
                    self.wake(job, parse_time(status["startTime"]) + timedelta(seconds=int(deadline)))
            else:
                for pod in active:
                    wrote |= self._delete_pod(job, pod, tally)
                active = []
        self._fill_counts(job, status, tally, active, terminating)
        return self.write_status(job, status) or wrote

    # ---- counting ----------------------------------------------------------------------------
    def _pods_of(self, uid: str) -> list[Obj]:
        return owned_by(self.informer(kinds.POD).values()).get(uid, [])

    def _count(self, job: Obj, tally: _Tally, pods: list[Obj]) -> None:
        """Count pods that finished (or vanished while running) since the last pass, in name order."""
        present = {md(p).get("uid", "") for p in pods}
        finished = [p for p in pods if is_terminal(p) and md(p).get("uid", "") not in tally.outcomes]
        vanished = [tally.last_seen[u] for u in sorted(tally.last_seen) if u not in present
                    and u not in tally.outcomes]
        for pod in pods:
            if not is_terminal(pod):
                tally.last_seen[md(pod).get("uid", "")] = pod
        for pod in [*finished, *vanished]:
            uid = md(pod).get("uid", "")
            tally.last_seen.pop(uid, None)
            if phase(pod) == "Succeeded":
                tally.outcomes[uid] = _Outcome("succeeded", pod_index(pod))
                tally.failures_since_success = 0
                continue
            match = match_pod_failure_policy(spec_of(job).get("podFailurePolicy"), pod)
            if match is not None and match.action == IGNORE:
                tally.outcomes[uid] = _Outcome("ignored", pod_index(pod))
                continue
            tally.outcomes[uid] = _Outcome("failed", pod_index(pod))
            tally.failures_since_success += 1
            tally.last_failure = self.ctx.now()
            if match is not None and match.action == FAIL_JOB and tally.policy_failure is None:
                tally.policy_failure = match.message

    def _fill_counts(self, job: Obj, status: Obj, tally: _Tally, active: list[Obj],
                     terminating: list[Obj]) -> None:
        for key, value in (("active", len(active)), ("succeeded", tally.count("succeeded")),
                           ("failed", tally.count("failed"))):
            if value:
                status[key] = value
            else:
                status.pop(key, None)
        status["ready"] = sum(1 for p in active if is_ready(p))
        status["terminating"] = len(terminating)
        status["uncountedTerminatedPods"] = {}
        if spec_of(job).get("completionMode") == "Indexed":
            text = format_indexes(tally.succeeded_indexes())
            if text:
                status["completedIndexes"] = text
            else:
                status.pop("completedIndexes", None)

    # ---- the end -----------------------------------------------------------------------------
    def _ending(self, job: Obj, status: Obj, tally: _Tally, now: datetime) -> tuple[str, str, str] | None:
        """(condition, reason, message) once the Job's outcome is decided, else None."""
        for cond_type in ("FailureTarget", "SuccessCriteriaMet"):
            for c in status.get("conditions") or []:
                if c.get("type") == cond_type and c.get("status") == "True":
                    return cond_type, str(c.get("reason")), str(c.get("message"))
        spec = spec_of(job)
        if tally.policy_failure is not None:
            return "FailureTarget", REASON_POLICY, tally.policy_failure
        if tally.count("failed") > int(spec.get("backoffLimit", 6)):
            return "FailureTarget", REASON_BACKOFF, MESSAGE_BACKOFF
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is not None and status.get("startTime") and not spec.get("suspend") \
                and now >= parse_time(status["startTime"]) + timedelta(seconds=int(deadline)):
            return "FailureTarget", REASON_DEADLINE, MESSAGE_DEADLINE
        if self._succeeded(job, tally):
            return "SuccessCriteriaMet", REASON_COMPLETIONS, MESSAGE_COMPLETIONS
        return None

    def _succeeded(self, job: Obj, tally: _Tally) -> bool:
        spec = spec_of(job)
        completions = spec.get("completions")
        if spec.get("completionMode") == "Indexed":
            return tally.succeeded_indexes() >= set(range(int(completions or 0)))
        if completions is None:  # a work queue: done once one pod succeeded and none runs
            running = any(is_active(p) for p in self._pods_of(md(job).get("uid", "")))
            return tally.count("succeeded") > 0 and not running
        return tally.count("succeeded") >= int(completions)

    def _finish(self, job: Obj, status: Obj, target: str, reason: str, message: str, stamp: str) -> bool:
        if target == "FailureTarget":
            set_condition(status, "Failed", "True", reason, message, stamp)
            self.ctx.event(job, "Warning", reason, message, self.component)
            self.ctx.decide(self.name, "fail", job, f"{reason}: {message}")
        else:
            set_condition(status, "Complete", "True", reason, message, stamp)
            status["completionTime"] = stamp
            self.ctx.event(job, "Normal", "Completed", "Job completed", self.component)
            self.ctx.decide(self.name, "complete", job, message)
        return True

    def _expire(self, job: Obj) -> bool:
        """``ttlSecondsAfterFinished``: delete the Job that long after it finished."""
        ttl = spec_of(job).get("ttlSecondsAfterFinished")
        if ttl is None:
            return False
        finished = [c.get("lastTransitionTime") for c in (job.get("status") or {}).get("conditions") or []
                    if c.get("type") in ("Complete", "Failed") and c.get("status") == "True"]
        due = parse_time(str(finished[0])) + timedelta(seconds=int(ttl))
        if self.ctx.now() < due:
            self.wake(job, due)
            return False
        if self.delete(kinds.JOB, job):
            self.ctx.decide(self.name, "delete", job, f"ttlSecondsAfterFinished {ttl} passed")
            return True
        return False

    # ---- running -----------------------------------------------------------------------------
    def _suspend_or_resume(self, job: Obj, status: Obj, stamp: str) -> bool:
        suspended = bool(spec_of(job).get("suspend"))
        if suspended and not condition_true(job, "Suspended"):
            set_condition(status, "Suspended", "True", "JobSuspended", "Job suspended", stamp)
            self.ctx.event(job, "Normal", "Suspended", "Job suspended", self.component)
            return True
        if not suspended and condition_true(job, "Suspended"):
            set_condition(status, "Suspended", "False", "JobResumed", "Job resumed", stamp)
            status["startTime"] = stamp
            self.ctx.event(job, "Normal", "Resumed", "Job resumed", self.component)
            return True
        return False

    def _scale(self, job: Obj, status: Obj, tally: _Tally, active: list[Obj], now: datetime) -> list[Obj]:
        """Create or delete pods so ``parallelism`` (at most what is left to do) run; the active pods after."""
        spec = spec_of(job)
        parallelism = int(spec.get("parallelism", 1))
        completions = spec.get("completions")
        indexed = spec.get("completionMode") == "Indexed"
        if indexed:
            busy = {pod_index(p) for p in active} | tally.succeeded_indexes()
            todo: list[int | None] = [i for i in range(int(completions or 0)) if i not in busy]
        elif completions is not None:
            todo = [None] * max(0, int(completions) - tally.count("succeeded") - len(active))
        else:
            todo = [] if tally.count("succeeded") else [None] * parallelism
        want = min(parallelism - len(active), len(todo))
        if want < 0:
            surplus = sorted(active, key=lambda p: (is_ready(p), md(p).get("creationTimestamp", "")))
            for pod in surplus[:-want]:
                self._delete_pod(job, pod, tally)
            return surplus[-want:]
        if want == 0:
            return active
        wait = backoff_remaining(tally.failures_since_success, tally.last_failure, now)
        if wait > timedelta(0):
            self.wake(job, now + wait)
            return active
        created = [new for index in todo[:want] if (new := self._create_pod(job, index)) is not None]
        return active + created

    def _create_pod(self, job: Obj, index: int | None) -> Obj | None:
        name, uid = md(job).get("name", ""), md(job).get("uid", "")
        labels = {CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name,
                  LEGACY_CONTROLLER_UID_LABEL: uid, LEGACY_JOB_NAME_LABEL: name}
        annotations: dict[str, str] = {}
        if index is not None:
            labels[COMPLETION_INDEX] = str(index)
            annotations[COMPLETION_INDEX] = str(index)
        pod = pod_from_template(job, spec_of(job).get("template") or {},
                                generate_name=f"{name}-" if index is None else f"{name}-{index}-",
                                extra_labels=labels, extra_annotations=annotations)
        if index is not None:
            _add_index_to_spec(pod["spec"], name, index)
        created = self.create(pod, job)
        if created is not None:
            self.ctx.event(job, "Normal", "SuccessfulCreate", f"Created pod: {md(created).get('name')}",
                           self.component)
        return created

    def _delete_pod(self, job: Obj, pod: Obj, not_a_failure: _Tally | None = None) -> bool:
        """Delete an active pod; with ``not_a_failure`` (suspend, scale down) it never counts as failed."""
        if not self.delete(kinds.POD, pod):
            return False
        if not_a_failure is not None:
            not_a_failure.outcomes[md(pod).get("uid", "")] = _Outcome("ignored", pod_index(pod))
        self.ctx.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {md(pod).get('name')}", self.component)
        return True


def _add_index_to_spec(spec: Obj, job_name: str, index: int) -> None:
    """Hostname ``<job>-<index>`` (unless the template names one) and ``JOB_COMPLETION_INDEX``."""
    spec.setdefault("hostname", f"{job_name}-{index}")
    env_var = {"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
        "fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}}}
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            env = container.setdefault("env", [])
            if not any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
                env.append(copy.deepcopy(env_var))

