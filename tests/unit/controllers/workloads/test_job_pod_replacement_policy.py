"""``podReplacementPolicy`` on the testers' reproducer: a Job pod preempted by a higher-priority
JobSet takes 20s to terminate.

Upstream ``manageJob`` (kubernetes/kubernetes pkg/controller/job/job_controller.go) creates
``wantActive - terminating - active`` pods, ``terminating`` counted only when
``onlyReplaceFailedPods(job)`` (``podReplacementPolicy: Failed``, the default under a
``podFailurePolicy``); ``firstPendingIndexes`` likewise skips the indexes of terminating pods.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
import yaml

from drasched.api import kinds
from drasched.sim.runner import Simulation

REPRO = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-priority}
value: 1000000
---
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {kubernetes.io/hostname: node-a}}
status:
  allocatable: {cpu: "4", memory: 32Gi, pods: "110"}
---
apiVersion: batch/v1
kind: Job
metadata: {name: victim}
spec:
  backoffLimit: 3
  template:
    metadata:
      annotations: {drasched.io/sim-duration: 90s, drasched.io/sim-termination: 20s}
    spec:
      terminationGracePeriodSeconds: 30
      restartPolicy: Never
      containers:
      - {name: main, image: busybox, resources: {requests: {cpu: "3"}}}
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: late}
spec:
  replicatedJobs:
  - name: wait
    replicas: 1
    template:
      spec:
        template:
          metadata: {annotations: {drasched.io/sim-duration: 10s}}
          spec:
            priorityClassName: high-priority
            restartPolicy: Never
            containers: [{name: w, image: busybox}]
  - name: high
    replicas: 1
    dependsOn: [{name: wait, status: Complete}]
    template:
      spec:
        template:
          metadata: {annotations: {drasched.io/sim-duration: 30s}}
          spec:
            priorityClassName: high-priority
            restartPolicy: Never
            containers: [{name: nginx, image: nginx, resources: {requests: {cpu: "3"}}}]
"""


def _replacement_created(spec: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(REPRO) if d]
    next(d for d in docs if d["kind"] == "Job")["spec"].update(spec)
    sim = Simulation()
    sim.load(docs)
    created: dict[str, datetime] = {}

    def note() -> None:
        for p in sim.store.iter_kind(kinds.POD):
            if p["metadata"]["name"].startswith("victim-"):
                created.setdefault(p["metadata"]["name"], sim.clock.now())

    assert sim.run(on_round=note)
    assert len(created) == 2, created
    job = sim.store.get(kinds.JOB, "victim", "default")
    return max(created.values()).strftime("%H:%M:%S"), job["status"]


@pytest.mark.parametrize(("spec", "at"), [
    # the old pod is Failed at 00:00:30 (preempted at 10s, 20s to terminate); the failure back-off adds 10s
    ({"podReplacementPolicy": "Failed"}, "00:00:40"),
    ({"podFailurePolicy": {"rules": [{"action": "Count", "onExitCodes": {"operator": "In", "values": [42]}}]}},
     "00:00:40"),
    # TerminatingOrFailed (the default without a podFailurePolicy): the terminating pod counts as failed at
    # once (upstream isPodFailed), so the replacement waits only the 10s back-off from the preemption at 10s
    ({}, "00:00:20"),
    ({"podReplacementPolicy": "TerminatingOrFailed"}, "00:00:20"),
])
def test_replacement_waits_for_the_terminating_pod_only_with_policy_failed(spec: dict[str, Any], at: str) -> None:
    when, status = _replacement_created(spec)
    assert when == at
    assert status["failed"] == 1
    assert status["succeeded"] == 1
