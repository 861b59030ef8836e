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
* **Per index** (``backoffLimitPerIndex``, Indexed only). Each replacement pod carries
  ``batch.kubernetes.io/job-index-failure-count`` (and ``...-ignored-failure-count``) of its
  index; a failed pod whose count reached the limit, or that matched a ``FailIndex`` rule,
  fails its index (``status.failedIndexes``), which is not retried. The back-off is per index
  (from the index's last failed pod) and the Job-wide one is not applied. More than
  ``maxFailedIndexes`` failed indexes fail the Job (``MaxFailedIndexesExceeded``); every index
  finished with some failed fails it too (``FailedIndexes``). Without this the defaulted
  ``backoffLimit`` (MaxInt32) would retry a failing index for ever.
* **Success policy** (``successPolicy``, Indexed only): once a rule is met the Job gets
  ``SuccessCriteriaMet`` (reason ``SuccessPolicy``, ``Matched rules at index <i>``), its other
  pods are deleted without counting as failed, and ``Complete`` follows with the same reason.
* **Ending.** A Job that will fail gets ``FailureTarget`` (reasons ``BackoffLimitExceeded``,
  ``DeadlineExceeded``, ``PodFailurePolicy``), its active pods are deleted, and ``Failed``
  follows once none is left; a Job that will succeed gets ``SuccessCriteriaMet`` then
  ``Complete`` (reason ``CompletionsReached``) and ``completionTime``. ``suspend`` deletes the
  active pods (``Suspended`` condition); resuming resets ``startTime``.
  ``ttlSecondsAfterFinished`` deletes a finished Job (its pods go with it by garbage collection).

The selector and the template labels are the API server's, generated from the Job's uid on
create (:mod:`drasched.api.job_strategy`; the memory store does it too).

Not modelled: the ``batch.kubernetes.io/job-tracking`` finalizer (pods are counted in
memory instead, so a Job loaded with a status counts from the pods it finds, and an index's
last failed pod is remembered rather than kept by its finalizer) and ``managedBy``.
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
from drasched.controllers.workloads.job_indexes import (
    INDEX_FAILURE_COUNT,
    INDEX_IGNORED_FAILURE_COUNT,
    MESSAGE_FAILED_INDEXES,
    MESSAGE_MAX_FAILED_INDEXES,
    REASON_FAILED_INDEXES,
    REASON_MAX_FAILED_INDEXES,
    REASON_SUCCESS_POLICY,
    finished_time,
    index_absolute_failure_count,
    is_index_failed,
    match_success_policy,
    new_index_failure_counts,
)
from drasched.controllers.workloads.podfailurepolicy import (
    FAIL_JOB,
    IGNORE,
    PolicyMatch,
    match_pod_failure_policy,
)

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
    """What the controller counted of one Job's finished pods (upstream keeps it via finalizers).

    Counters are kept beside the outcomes so a sync costs the same after a thousand failures
    as after one (a Job retried for long must not slow every round down).
    """

    outcomes: dict[str, _Outcome] = field(default_factory=dict)
    last_seen: dict[str, Obj] = field(default_factory=dict)
    failures_since_success: int = 0
    last_failure: datetime | None = None
    policy_failure: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    done_indexes: set[int] = field(default_factory=set)
    failed_indexes: set[int] = field(default_factory=set)
    # per index, the last failed pod and when it ended: its replacement inherits its counts
    # (upstream getPodsWithDelayedDeletionPerIndex, which keeps that pod by its finalizer)
    last_failed: dict[int, tuple[Obj, datetime]] = field(default_factory=dict)

    def record(self, uid: str, outcome: _Outcome) -> None:
        old = self.outcomes.get(uid)
        if old is not None:
            self.counts[old.result] -= 1
        self.outcomes[uid] = outcome
        self.counts[outcome.result] = self.counts.get(outcome.result, 0) + 1
        if outcome.result == "succeeded" and outcome.index is not None:
            self.done_indexes.add(outcome.index)

    def count(self, result: str) -> int:
        return self.counts.get(result, 0)

    def succeeded_indexes(self) -> set[int]:
        return self.done_indexes


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


def per_index_limit(job: Obj) -> int | None:
    """``backoffLimitPerIndex`` of an Indexed Job, else None (upstream ``hasBackoffLimitPerIndex``)."""
    spec = spec_of(job)
    limit = spec.get("backoffLimitPerIndex")
    if limit is None or spec.get("completionMode") != "Indexed":
        return None
    return int(limit)


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
            # deleted pods count as failed once gone, as upstream counts them, unless the Job
            # succeeded (upstream trackJobStatusAndRemoveFinalizers skips them on SuccessCriteriaMet)
            spared = tally if cond_type == "SuccessCriteriaMet" else None
            for pod in active:
                wrote |= self._delete_pod(job, pod, spared)
            active = []
        else:
            wrote |= self._suspend_or_resume(job, status, stamp)
            if not spec.get("suspend"):
                status.setdefault("startTime", stamp)
                active = self._scale(job, status, tally, active, terminating, now)
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
        fresh = [p for p in pods if md(p).get("uid", "") not in tally.outcomes]  # counted pods cost nothing
        finished = [p for p in fresh if is_terminal(p) or _failed_once_deleted(job, p)]
        vanished = [tally.last_seen[u] for u in sorted(tally.last_seen) if u not in present
                    and u not in tally.outcomes]
        for pod in fresh:
            if not is_terminal(pod) and not _failed_once_deleted(job, pod):
                tally.last_seen[md(pod).get("uid", "")] = pod
        for pod in [*finished, *vanished]:
            uid = md(pod).get("uid", "")
            tally.last_seen.pop(uid, None)
            if phase(pod) == "Succeeded":
                tally.record(uid, _Outcome("succeeded", pod_index(pod)))
                tally.failures_since_success = 0
                continue
            # every failed pod feeds the back-off, ignored ones too (upstream newBackoffRecord takes
            # all of getNewFinishedPods' failed pods): a pod that fails at once under an Ignore
            # rule is not recreated in the same instant for ever
            tally.failures_since_success += 1
            tally.last_failure = finished_time(pod, self.ctx.now())
            match = match_pod_failure_policy(spec_of(job).get("podFailurePolicy"), pod)
            self._count_index_failure(job, tally, pod, match)
            if match is not None and match.action == IGNORE:
                tally.record(uid, _Outcome("ignored", pod_index(pod)))
                continue
            tally.record(uid, _Outcome("failed", pod_index(pod)))
            if match is not None and match.action == FAIL_JOB and tally.policy_failure is None:
                tally.policy_failure = match.message

    def _count_index_failure(self, job: Obj, tally: _Tally, pod: Obj, match: PolicyMatch | None) -> None:
        """With ``backoffLimitPerIndex``: remember the index's last failed pod (upstream
        ``getPodsWithDelayedDeletionPerIndex``) and fail the index once its limit is spent
        (``calculateFailedIndexes`` / ``isIndexFailed``)."""
        limit = per_index_limit(job)
        index = pod_index(pod)
        if limit is None or index is None or index >= int(spec_of(job).get("completions") or 0):
            return
        if condition_true(job, "FailureTarget") or condition_true(job, "SuccessCriteriaMet"):
            return  # pods deleted for the Job's end lost their finalizer upstream: no index of theirs fails
        ended = finished_time(pod, self.ctx.now())
        kept = tally.last_failed.get(index)
        if kept is None or (index_absolute_failure_count(kept[0]) <= index_absolute_failure_count(pod)
                            and ended >= kept[1]):
            tally.last_failed[index] = (pod, ended)
        if is_index_failed(pod, match, limit):
            tally.failed_indexes.add(index)

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
            if per_index_limit(job) is not None:  # upstream writes it, "" included, with the limit
                status["failedIndexes"] = format_indexes(tally.failed_indexes)

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
        if tally.count("failed") > int(spec.get("backoffLimit", 6)) or self._past_backoff_limit_on_failure(job):
            return "FailureTarget", REASON_BACKOFF, MESSAGE_BACKOFF
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is not None and status.get("startTime") and not spec.get("suspend") \
                and now >= parse_time(status["startTime"]) + timedelta(seconds=int(deadline)):
            return "FailureTarget", REASON_DEADLINE, MESSAGE_DEADLINE
        if spec.get("completionMode") == "Indexed":
            completions = int(spec.get("completions") or 0)
            if per_index_limit(job) is not None:  # upstream syncJob, after the Job-wide limits
                failed = len(tally.failed_indexes)
                most = spec.get("maxFailedIndexes")
                if most is not None and failed > int(most):
                    return "FailureTarget", REASON_MAX_FAILED_INDEXES, MESSAGE_MAX_FAILED_INDEXES
                if failed and failed + len(tally.succeeded_indexes()) >= completions:
                    return "FailureTarget", REASON_FAILED_INDEXES, MESSAGE_FAILED_INDEXES
            met = match_success_policy(spec.get("successPolicy"), completions, tally.succeeded_indexes())
            if met is not None:
                return "SuccessCriteriaMet", REASON_SUCCESS_POLICY, met
        if self._succeeded(job, tally):
            return "SuccessCriteriaMet", REASON_COMPLETIONS, MESSAGE_COMPLETIONS
        return None

    def _past_backoff_limit_on_failure(self, job: Obj) -> bool:
        """Upstream ``pastBackoffLimitOnFailure``: with ``restartPolicy: OnFailure`` the kubelet
        restarts failed containers in place, so the restarts of the Pending and Running pods
        count: their sum reaching ``backoffLimit`` (above 0 when it is 0) fails the Job."""
        template_spec = ((spec_of(job).get("template") or {}).get("spec")) or {}
        if template_spec.get("restartPolicy") != "OnFailure":
            return False
        restarts = 0
        for pod in self._pods_of(md(job).get("uid", "")):
            if phase(pod) not in ("Pending", "Running"):
                continue
            status = pod.get("status") or {}
            for cs in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
                restarts += int(cs.get("restartCount") or 0)
        limit = int(spec_of(job).get("backoffLimit", 6))
        return restarts > 0 if limit == 0 else restarts >= limit

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
        ttl = spec_of(job).get("ttlSecondsAfterFinished")
        if ttl is not None:  # the TTL controller's timer: nothing else may change before it falls due
            self.wake(job, parse_time(stamp) + timedelta(seconds=int(ttl)))
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

    def _scale(self, job: Obj, status: Obj, tally: _Tally, active: list[Obj], terminating: list[Obj],
               now: datetime) -> list[Obj]:
        """Create or delete pods so ``parallelism`` (at most what is left to do) run; the active pods after.

        With ``podReplacementPolicy: Failed`` (also the default under a ``podFailurePolicy``) a
        terminating pod is replaced only once it failed or is gone: upstream ``manageJob`` creates
        ``wantActive - terminating - active`` pods and ``firstPendingIndexes`` skips the indexes of
        terminating pods (``onlyReplaceFailedPods``)."""
        spec = spec_of(job)
        parallelism = int(spec.get("parallelism", 1))
        completions = spec.get("completions")
        indexed = spec.get("completionMode") == "Indexed"
        waiting = terminating if only_replace_failed_pods(job) else []
        if indexed:
            busy = {pod_index(p) for p in [*active, *waiting]} | tally.succeeded_indexes() | tally.failed_indexes
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
        if waiting:  # the indexes of terminating pods are already out of todo
            want = min(parallelism - len(active) - len(waiting), len(todo) - (0 if indexed else len(waiting)))
        if want <= 0:
            return active
        if indexed and per_index_limit(job) is not None:
            return active + self._create_per_index(job, tally, [i for i in todo[:want] if i is not None], now)
        wait = backoff_remaining(tally.failures_since_success, tally.last_failure, now)
        if wait > timedelta(0):
            self.wake(job, now + wait)
            return active
        created = [new for index in todo[:want] if (new := self._create_pod(job, index)) is not None]
        return active + created

    def _create_per_index(self, job: Obj, tally: _Tally, indexes: list[int], now: datetime) -> list[Obj]:
        """Create the pending indexes whose own back-off is over, else wait for the nearest
        (upstream ``getPodCreationInfoForIndependentIndexes``; the Job-wide back-off is skipped)."""
        ready: list[int] = []
        waits: list[timedelta] = []
        for index in indexes:
            kept = tally.last_failed.get(index)
            wait = timedelta(0) if kept is None else backoff_remaining(
                index_absolute_failure_count(kept[0]) + 1, kept[1], now)
            if wait > timedelta(0):
                waits.append(wait)
            else:
                ready.append(index)
        if waits:
            self.wake(job, now + min(waits))
        policy = spec_of(job).get("podFailurePolicy")
        created: list[Obj] = []
        for index in ready:
            kept = tally.last_failed.get(index)
            replaced = kept[0] if kept is not None else None
            match = match_pod_failure_policy(policy, replaced) if replaced is not None else None
            new = self._create_pod(job, index, new_index_failure_counts(replaced, match))
            if new is not None:
                created.append(new)
        return created

    def _create_pod(self, job: Obj, index: int | None, failures: tuple[int, int] | None = None) -> Obj | None:
        """``failures``: the index's (failure, ignored failure) counts, set with ``backoffLimitPerIndex``
        (upstream ``addIndexFailureCountAnnotation``)."""
        name, uid = md(job).get("name", ""), md(job).get("uid", "")
        labels = {CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name,
                  LEGACY_CONTROLLER_UID_LABEL: uid, LEGACY_JOB_NAME_LABEL: name}
        annotations: dict[str, str] = {}
        if index is not None:
            labels[COMPLETION_INDEX] = str(index)
            annotations[COMPLETION_INDEX] = str(index)
        if failures is not None:
            annotations[INDEX_FAILURE_COUNT] = str(failures[0])
            if failures[1] > 0:
                annotations[INDEX_IGNORED_FAILURE_COUNT] = str(failures[1])
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
            not_a_failure.record(md(pod).get("uid", ""), _Outcome("ignored", pod_index(pod)))
        self.ctx.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {md(pod).get('name')}", self.component)
        return True


def only_replace_failed_pods(job: Obj) -> bool:
    """Upstream ``onlyReplaceFailedPods``: ``podReplacementPolicy: Failed``, or a ``podFailurePolicy``
    (the API server defaults the policy to Failed then)."""
    spec = spec_of(job)
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def _failed_once_deleted(job: Obj, pod: Obj) -> bool:
    """A pod being deleted already counts as failed (upstream ``isPodFailed``: without a
    ``podFailurePolicy`` and unless ``podReplacementPolicy: Failed``, a deletion timestamp on a pod
    that did not succeed is a failure), so its index's limit and the Job's are judged at once,
    before a replacement is made for it."""
    if only_replace_failed_pods(job):
        return False
    return is_deleting(pod) and phase(pod) != "Succeeded"


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

