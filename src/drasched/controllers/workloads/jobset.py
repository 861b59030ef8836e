"""The ``jobset.x-k8s.io/v1alpha2`` (or ``v1``) JobSet controller of the embedded control plane (basics).

As the JobSet project's controller (``pkg/controllers/jobset_controller.go``): each
replicated Job ``r`` with ``replicas`` n becomes the Jobs ``<jobset>-<r>-0 .. n-1``, labelled
and annotated (also in their pod template) with ``jobset.sigs.k8s.io/jobset-name``,
``replicatedjob-name``, ``replicatedjob-replicas``, ``job-index``, ``job-key`` and
``restart-attempt``; with DNS hostnames on (the default) pods get the subdomain
``<jobset>``. The Job controller runs the Jobs.

* **Success** (``successPolicy``): ``All`` (default) when every Job of the target replicated
  Jobs (all when none are named) completed, ``Any`` when one did: condition ``Completed``
  (``AllJobsCompleted``, "jobset completed successfully"), ``terminalState: Completed``.
* **Failure** (``failurePolicy.maxRestarts``, 0 without a policy): a failed Job restarts the
  whole JobSet (every Job deleted and made again, ``status.restarts`` + 1,
  ``restart-attempt`` label) until the restarts are used up; then condition ``Failed``
  (``ReachedMaxRestarts``, or ``FailedJobs`` without a policy), ``terminalState: Failed``.

* **Suspend** (``spec.suspend``): Jobs are made with the JobSet's ``suspend`` (the Job controller
  runs no pods for them); suspending suspends the running ones (their pods are deleted), condition
  ``Suspended`` True (``SuspendedJobs``, "jobset is suspended"); resuming sets ``suspend: false`` on
  them (merging the replicated Job's pod template labels, annotations, nodeSelector, tolerations
  and scheduling gates, as Kueue edits them while suspended), then ``Suspended`` False
  (``ResumeJobs``, "jobset is resumed").
* **Staging**: a replicated Job with ``dependsOn`` ``[{name, status: Complete|Ready}]`` gets its
  Jobs only once every named (earlier) replicated Job has all its Jobs succeeded (Complete) or
  ready, succeeded or failed (Ready); with ``startupPolicy.startupPolicyOrder: InOrder`` (v1alpha2 only) one
  replicated Job at a time, the next once all of the previous one's Jobs are ready (conditions
  ``StartupPolicyInProgress``, then ``StartupPolicyCompleted``). A suspended JobSet gets all its
  Jobs (dependsOn aside) and resumes them in that order. The implicit JobSet gang
  (``gangs.py``) still counts every replicated Job's pods, so a staged JobSet needs it off.

Conditions change as upstream's ``updateCondition``: only on a status change, a False one is never
added. A finished JobSet's still-active Jobs are deleted. Not modelled: the headless Service,
exclusive placement, failure-policy rules, ``managedBy``; ``dependsOn``
and ``InOrder`` together, or a ``dependsOn`` naming a later replicated Job, are not rejected (the
upstream webhook / CRD validation does; here such a replicated Job is never created).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterator

from drasched.api import kinds
from drasched.api.errors import Conflict, NotFound
from drasched.api.meta import format_time, owner_reference
from drasched.controllers.workloads.common import (
    Obj,
    WorkloadBase,
    condition_true,
    is_deleting,
    md,
    owned_by,
    spec_of,
)
from drasched.controllers.workloads.job import job_finished

PREFIX = "jobset.sigs.k8s.io/"
JOBSET_NAME = PREFIX + "jobset-name"
REPLICATED_JOB_NAME = PREFIX + "replicatedjob-name"
REPLICATED_JOB_REPLICAS = PREFIX + "replicatedjob-replicas"
JOB_INDEX = PREFIX + "job-index"
JOB_KEY = PREFIX + "job-key"
RESTART_ATTEMPT = PREFIX + "restart-attempt"

COMPLETED_REASON, COMPLETED_MESSAGE = "AllJobsCompleted", "jobset completed successfully"
FAILED_JOBS_REASON, FAILED_JOBS_MESSAGE = "FailedJobs", "jobset failed due to one or more job failures"
MAX_RESTARTS_REASON, MAX_RESTARTS_MESSAGE = "ReachedMaxRestarts", "jobset failed due to reaching max number of restarts"
SUSPENDED_REASON, SUSPENDED_MESSAGE = "SuspendedJobs", "jobset is suspended"
RESUMED_REASON, RESUMED_MESSAGE = "ResumeJobs", "jobset is resumed"
STARTUP_IN_PROGRESS, STARTUP_COMPLETED = "StartupPolicyInProgress", "StartupPolicyCompleted"
IN_ORDER_IN_PROGRESS_REASON = "InOrderStartupPolicyInProgress"
IN_ORDER_IN_PROGRESS_MESSAGE = "in order startup policy is in progress"
IN_ORDER_COMPLETED_REASON = "InOrderStartupPolicyCompleted"
IN_ORDER_COMPLETED_MESSAGE = "in order startup policy has completed"
_EXCLUSIVE_CONDITIONS = {STARTUP_IN_PROGRESS: STARTUP_COMPLETED, STARTUP_COMPLETED: STARTUP_IN_PROGRESS}


def job_key(namespace: str, job_name: str) -> str:
    """``jobset.sigs.k8s.io/job-key``: SHA-1 of ``<namespace>/<job name>``, hex."""
    return hashlib.sha1(f"{namespace}/{job_name}".encode()).hexdigest()


def jobset_finished(js: Obj) -> bool:
    return condition_true(js, "Completed") or condition_true(js, "Failed")


def jobset_suspended(js: Obj) -> bool:
    """``spec.suspend`` (upstream ``jobSetSuspended``): child Jobs are made, and kept, suspended."""
    return bool(spec_of(js).get("suspend"))


def starts_in_order(js: Obj) -> bool:
    """Upstream ``inOrderStartupPolicy``. A ``jobset.x-k8s.io/v1`` JobSet has no ``startupPolicy``
    (v1's ``JobSetSpec`` dropped it for ``dependsOn``; the server prunes the field), so it never starts in order."""
    if js.get("apiVersion") in kinds.JOB_SET_ALSO_SERVED:
        return False
    return (spec_of(js).get("startupPolicy") or {}).get("startupPolicyOrder") == "InOrder"


def _startable(js: Obj, rjob_status: list[Obj], in_order: bool) -> Iterator[tuple[Obj, str]]:
    """The replicated Jobs whose Jobs may be made or resumed now, in spec order: their
    ``dependsOn`` reached, and under ``InOrder`` not every replica started already (the
    caller stops after the first of those: one stage at a time)."""
    replicas: dict[str, int] = {}
    for rjob in spec_of(js).get("replicatedJobs") or []:
        name = str(rjob.get("name"))
        replicas[name] = int(rjob.get("replicas", 1))
        if not dependency_reached(rjob, replicas, rjob_status):
            continue
        if in_order and all_replicas_started(replicas[name], _find_status(rjob_status, name)):
            continue
        yield rjob, name


def _find_status(rjob_status: list[Obj], name: str) -> Obj | None:
    return next((s for s in rjob_status if s.get("name") == name), None)


def all_replicas_started(replicas: int, rjob_status: Obj | None) -> bool:
    """Every Job of the replicated Job is ready, succeeded or failed (upstream ``allReplicasStarted``):
    with InOrder, the next replicated Job may start."""
    st = rjob_status or {}
    return replicas == int(st.get("failed") or 0) + int(st.get("ready") or 0) + int(st.get("succeeded") or 0)


def dependency_reached(rjob: Obj, replicas: dict[str, int], rjob_status: list[Obj]) -> bool:
    """Every ``dependsOn`` entry of ``rjob`` reached its status (upstream ``dependencyReachedStatus``):
    ``Complete``: all its Jobs succeeded; ``Ready``: all are ready, succeeded or failed. ``replicas``
    holds only the replicated Jobs before ``rjob`` (upstream's webhook lets ``dependsOn`` name only
    those), so a later or unknown name is never reached."""
    for dep in rjob.get("dependsOn") or []:
        name = dep.get("name")
        actual = _find_status(rjob_status, str(name))
        if actual is None or name not in replicas:
            return False
        if dep.get("status") == "Complete" and replicas[name] != int(actual.get("succeeded") or 0):
            return False
        if dep.get("status") == "Ready" and not all_replicas_started(replicas[name], actual):
            return False
    return True


def update_condition(status: Obj, cond_type: str, cond_status: str, reason: str, message: str, now: str) -> bool:
    """Upstream ``updateCondition``: a condition whose status changes is replaced whole (same status:
    no change, whatever the reason); a new one is added only when True; StartupPolicyInProgress and
    StartupPolicyCompleted exclude each other (the older one goes False). True when anything changed."""
    conds = status.setdefault("conditions", [])
    found = changed = False
    for i, cond in enumerate(conds):
        if cond.get("type") == cond_type:
            found = True
            if cond.get("status") != cond_status:
                conds[i] = {"type": cond_type, "status": cond_status, "lastTransitionTime": now,
                            "reason": reason, "message": message}
                changed = True
        elif _EXCLUSIVE_CONDITIONS.get(cond_type) == cond.get("type") and cond.get("status") == "True" \
                and cond_status == "True":
            cond["status"] = "False"
            changed = True
    if not found and cond_status == "True":
        conds.append({"type": cond_type, "status": cond_status, "lastTransitionTime": now,
                      "reason": reason, "message": message})
        changed = True
    if not conds:
        del status["conditions"]
    return changed


def _resumed_spec(job: Obj, pod_template: Obj) -> Obj:
    """The spec patch that resumes a child Job: ``suspend: false``, and the replicated Job's pod
    template labels, annotations, nodeSelector, tolerations and schedulingGates merged in (they may
    change while suspended, as Kueue changes them): upstream ``JobSetReconciler.resumeJob``."""
    have = spec_of(job).get("template") or {}
    have_md, want_md = have.get("metadata") or {}, pod_template.get("metadata") or {}
    have_spec, want_spec = have.get("spec") or {}, pod_template.get("spec") or {}
    meta: Obj = {}
    for key in ("labels", "annotations"):
        merged = {**(have_md.get(key) or {}), **(want_md.get(key) or {})}
        if merged != (have_md.get(key) or {}):
            meta[key] = merged
    pod_spec: Obj = {}
    selector = {**(have_spec.get("nodeSelector") or {}), **(want_spec.get("nodeSelector") or {})}
    if selector != (have_spec.get("nodeSelector") or {}):
        pod_spec["nodeSelector"] = selector
    for key in ("tolerations", "schedulingGates"):
        old = list(have_spec.get(key) or [])
        merged_list = old + [x for x in want_spec.get(key) or [] if x not in old]
        if merged_list != old:
            pod_spec[key] = merged_list
    template: Obj = {k: v for k, v in (("metadata", meta), ("spec", pod_spec)) if v}
    return {"suspend": False, **({"template": template} if template else {})}


class JobSetController(WorkloadBase):
    """Makes each JobSet's Jobs, restarts them on failure, and reports the outcome."""

    name = "jobset-controller"
    component = "jobset-controller"
    kind = kinds.JOB_SET
    watched = (kinds.JOB,)

    def sync(self, js: Obj) -> bool:
        jobs = [j for j in owned_by(self.informer(kinds.JOB).values()).get(md(js).get("uid", ""), [])
                if not is_deleting(j)]
        status = copy.deepcopy(js.get("status") or {})
        restarts = int(status.get("restarts") or 0)
        stamp = format_time(self.ctx.now())
        wrote = False
        current = [j for j in jobs if (md(j).get("labels") or {}).get(RESTART_ATTEMPT) == str(restarts)]
        stale = [j for j in jobs if j not in current]
        for job in stale:  # Jobs of an earlier attempt go before the next attempt's are made
            wrote |= self.delete(kinds.JOB, job)
        if jobset_finished(js):
            return self._delete_active(current) or wrote
        rjob_status = self._rjob_status(js, current)
        status["replicatedJobsStatus"] = rjob_status
        if any(condition_true(j, "Failed") for j in current):
            policy = spec_of(js).get("failurePolicy")
            max_restarts = int((policy or {}).get("maxRestarts") or 0)
            if restarts < max_restarts:
                status["restarts"] = restarts + 1
                for job in current:
                    wrote |= self.delete(kinds.JOB, job)
                self.ctx.decide(self.name, "restart", js, f"a Job failed: restart {restarts + 1} of {max_restarts}")
                return self.write_status(js, status) or wrote
            reason, message = (MAX_RESTARTS_REASON, MAX_RESTARTS_MESSAGE) if policy is not None else (
                FAILED_JOBS_REASON, FAILED_JOBS_MESSAGE)
            self._condition(js, status, "Failed", "True", reason, message, stamp, event_type="Warning")
            status["terminalState"] = "Failed"
            self.ctx.decide(self.name, "fail", js, message)
            self._delete_active(current)
            return self.write_status(js, status) or True
        if self._succeeded(js, current):
            self._condition(js, status, "Completed", "True", COMPLETED_REASON, COMPLETED_MESSAGE, stamp)
            status["terminalState"] = "Completed"
            self.ctx.decide(self.name, "complete", js, COMPLETED_MESSAGE)
            self._delete_active(current)
            return self.write_status(js, status) or True
        if not stale:
            wrote |= self._reconcile_replicated_jobs(js, status, current, rjob_status, restarts, stamp)
        active = [j for j in current if not job_finished(j)]
        if jobset_suspended(js):
            wrote |= self._suspend_jobs(js, status, active, stamp)
        else:
            wrote |= self._resume_jobs_if_necessary(js, status, active, rjob_status, stamp)
        return self.write_status(js, status) or wrote

    def _reconcile_replicated_jobs(self, js: Obj, status: Obj, current: list[Obj], rjob_status: list[Obj],
                                   restarts: int, stamp: str) -> bool:
        """Create each replicated Job's missing Jobs once its ``dependsOn`` are met; with
        ``startupPolicyOrder: InOrder`` (JobSet not suspended) one replicated Job at a time, the
        next only once every Job of the previous one is ready. As upstream
        ``JobSetReconciler.reconcileReplicatedJobs``."""
        in_order = starts_in_order(js) and not jobset_suspended(js)
        have = {md(j).get("name") for j in current}
        wanted = self._wanted_jobs(js, restarts)
        wrote = False
        for _rjob, name in _startable(js, rjob_status, in_order):
            for job in wanted:
                if (md(job).get("labels") or {}).get(REPLICATED_JOB_NAME) == name and md(job).get("name") not in have:
                    wrote |= self.create(job, js) is not None
            if in_order:
                self._condition(js, status, STARTUP_IN_PROGRESS, "True", IN_ORDER_IN_PROGRESS_REASON,
                                IN_ORDER_IN_PROGRESS_MESSAGE, stamp)
                return wrote
        if in_order:
            self._condition(js, status, STARTUP_COMPLETED, "True", IN_ORDER_COMPLETED_REASON,
                            IN_ORDER_COMPLETED_MESSAGE, stamp)
        return wrote

    def _suspend_jobs(self, js: Obj, status: Obj, active: list[Obj], stamp: str) -> bool:
        """A suspended JobSet suspends its running Jobs (the Job controller then deletes their
        pods) and says so: upstream ``JobSetReconciler.suspendJobs``."""
        wrote = False
        for job in active:
            if not spec_of(job).get("suspend"):
                wrote |= self._update_job(job, {"suspend": True})
        self._condition(js, status, "Suspended", "True", SUSPENDED_REASON, SUSPENDED_MESSAGE, stamp)
        return wrote

    def _resume_jobs_if_necessary(self, js: Obj, status: Obj, active: list[Obj], rjob_status: list[Obj],
                                  stamp: str) -> bool:
        """Resume the suspended Jobs of an unsuspended JobSet, replicated Job by replicated Job,
        honouring ``dependsOn`` and ``InOrder`` as creation does; the ``Suspended`` condition goes
        False only once every one was resumed. Upstream ``JobSetReconciler.resumeJobsIfNecessary``."""
        in_order = starts_in_order(js)
        wrote = False
        for rjob, name in _startable(js, rjob_status, in_order):
            pod_template = spec_of(rjob.get("template") or {}).get("template") or {}
            for job in active:
                if (md(job).get("labels") or {}).get(REPLICATED_JOB_NAME) == name and spec_of(job).get("suspend"):
                    wrote |= self._update_job(job, _resumed_spec(job, pod_template))
            if in_order:
                self._condition(js, status, STARTUP_IN_PROGRESS, "True", IN_ORDER_IN_PROGRESS_REASON,
                                IN_ORDER_IN_PROGRESS_MESSAGE, stamp)
                return wrote
        self._condition(js, status, "Suspended", "False", RESUMED_REASON, RESUMED_MESSAGE, stamp)
        return wrote

    def _update_job(self, job: Obj, spec_patch: Obj) -> bool:
        """Change a child Job's spec under its resourceVersion (upstream's ``Update``); a lost race is
        looked at again next round."""
        try:
            updated = self.ctx.store.patch(kinds.JOB, md(job).get("name", ""), md(job).get("namespace"),
                                           {"metadata": {"resourceVersion": md(job).get("resourceVersion")},
                                            "spec": spec_patch})
        except (Conflict, NotFound):
            return True
        self._put(updated)
        return True

    def _condition(self, js: Obj, status: Obj, cond_type: str, cond_status: str, reason: str, message: str,
                   stamp: str, *, event_type: str = "Normal") -> None:
        """Set a JobSet condition as upstream ``setCondition`` does, with its Event when it changed."""
        if update_condition(status, cond_type, cond_status, reason, message, stamp):
            self.ctx.event(js, event_type, reason, message, self.component)

    def _delete_active(self, jobs: list[Obj]) -> bool:
        """A finished JobSet's Jobs that still run are deleted (their pods go with them)."""
        wrote = False
        for job in jobs:
            if not job_finished(job):
                wrote |= self.delete(kinds.JOB, job)
        return wrote

    def _succeeded(self, js: Obj, jobs: list[Obj]) -> bool:
        policy = spec_of(js).get("successPolicy") or {}
        targets = set(policy.get("targetReplicatedJobs") or []) or {
            r.get("name") for r in spec_of(js).get("replicatedJobs") or []}
        wanted = [r for r in spec_of(js).get("replicatedJobs") or [] if r.get("name") in targets]
        done = [j for j in jobs if condition_true(j, "Complete")
                and (md(j).get("labels") or {}).get(REPLICATED_JOB_NAME) in targets]
        if policy.get("operator") == "Any":
            return bool(done)
        return len(done) == sum(int(r.get("replicas", 1)) for r in wanted) and bool(wanted)

    def _wanted_jobs(self, js: Obj, restarts: int) -> list[Obj]:
        name, ns = str(md(js).get("name")), md(js).get("namespace") or "default"
        spec = spec_of(js)
        dns = (spec.get("network") or {}).get("enableDNSHostnames", True)
        subdomain = (spec.get("network") or {}).get("subdomain") or name
        out: list[Obj] = []
        for rjob in spec.get("replicatedJobs") or []:
            replicas = int(rjob.get("replicas", 1))
            for index in range(replicas):
                job_name = f"{name}-{rjob.get('name')}-{index}"
                marks = {JOBSET_NAME: name, REPLICATED_JOB_NAME: str(rjob.get("name")),
                         REPLICATED_JOB_REPLICAS: str(replicas), JOB_INDEX: str(index),
                         JOB_KEY: job_key(ns, job_name), RESTART_ATTEMPT: str(restarts)}
                template = copy.deepcopy(rjob.get("template") or {})
                job_spec = template.get("spec") or {}
                job_spec["suspend"] = jobset_suspended(js)  # upstream constructJob: the JobSet's, always
                pod_template = job_spec.setdefault("template", {})
                pod_md = pod_template.setdefault("metadata", {})
                pod_md.setdefault("labels", {}).update(marks)
                pod_md.setdefault("annotations", {}).update(marks)
                if dns:
                    pod_template.setdefault("spec", {})["subdomain"] = subdomain
                tmd = template.get("metadata") or {}
                out.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
                    "name": job_name, "namespace": ns,
                    "labels": {**(tmd.get("labels") or {}), **marks},
                    "annotations": {**(tmd.get("annotations") or {}), **marks},
                    "ownerReferences": [owner_reference(js)]}, "spec": job_spec})
        return out

    def _rjob_status(self, js: Obj, jobs: list[Obj]) -> list[Obj]:
        out = []
        for rjob in spec_of(js).get("replicatedJobs") or []:
            mine = [j for j in jobs if (md(j).get("labels") or {}).get(REPLICATED_JOB_NAME) == rjob.get("name")]
            active = [j for j in mine if not job_finished(j)]
            out.append({"name": rjob.get("name"),
                        "ready": sum(1 for j in active if _job_ready(j)),
                        "succeeded": sum(1 for j in mine if condition_true(j, "Complete")),
                        "failed": sum(1 for j in mine if condition_true(j, "Failed")),
                        "active": sum(1 for j in active if int((j.get("status") or {}).get("active") or 0) > 0),
                        "suspended": sum(1 for j in active if spec_of(j).get("suspend"))})
        return out


def _job_ready(job: Obj) -> bool:
    """All the pods the Job runs at once are ready or done (the JobSet's ``ready`` count)."""
    status = job.get("status") or {}
    spec = spec_of(job)
    want = int(spec.get("parallelism", 1))
    if spec.get("completions") is not None:
        want = min(want, int(spec["completions"]))
    return int(status.get("ready") or 0) + int(status.get("succeeded") or 0) >= want
