"""The ``jobset.x-k8s.io/v1alpha2`` JobSet controller of the embedded control plane (basics).

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

A finished JobSet's still-active Jobs are deleted. Not modelled: the headless Service,
startup order, exclusive placement, failure-policy rules, ``suspend``, ``managedBy``.
"""

from __future__ import annotations

import copy
import hashlib

from drasched.api import kinds
from drasched.api.meta import format_time, owner_reference
from drasched.controllers.workloads.common import (
    Obj,
    WorkloadBase,
    condition_true,
    is_deleting,
    md,
    owned_by,
    set_condition,
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


def job_key(namespace: str, job_name: str) -> str:
    """``jobset.sigs.k8s.io/job-key``: SHA-1 of ``<namespace>/<job name>``, hex."""
    return hashlib.sha1(f"{namespace}/{job_name}".encode()).hexdigest()


def jobset_finished(js: Obj) -> bool:
    return condition_true(js, "Completed") or condition_true(js, "Failed")


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
        status["replicatedJobsStatus"] = self._rjob_status(js, current)
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
            set_condition(status, "Failed", "True", reason, message, stamp, probe=None)
            status["terminalState"] = "Failed"
            self.ctx.event(js, "Warning", reason, message, self.component)
            self.ctx.decide(self.name, "fail", js, message)
            self._delete_active(current)
            return self.write_status(js, status) or True
        if self._succeeded(js, current):
            set_condition(status, "Completed", "True", COMPLETED_REASON, COMPLETED_MESSAGE, stamp, probe=None)
            status["terminalState"] = "Completed"
            self.ctx.event(js, "Normal", COMPLETED_REASON, COMPLETED_MESSAGE, self.component)
            self.ctx.decide(self.name, "complete", js, COMPLETED_MESSAGE)
            self._delete_active(current)
            return self.write_status(js, status) or True
        if not stale:
            have = {md(j).get("name") for j in current}
            for job in self._wanted_jobs(js, restarts):
                if md(job).get("name") not in have:
                    wrote |= self.create(job, js) is not None
        return self.write_status(js, status) or wrote

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
