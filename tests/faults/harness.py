"""What every fault test needs: a DRA cluster, ``drasched serve`` as real processes, a burst.

The cluster: DRA-only nodes (no GPU in their allocatable; each has a ResourceSlice of
``DEVICES_PER_NODE`` devices), one DeviceClass that counts as ``nvidia.com/gpu`` for queue
accounting, one Queue, one ResourceClaimTemplate; every pod of a burst asks for one device
through the template. The API server writes an audit log (``Metadata`` level, writes only),
so that who wrote what, and what the server refused, is read from the server's side.

Serve replicas run as ``drasched serve`` subprocesses, each as its own user of the API
server, so that kill -9, SIGSTOP/SIGCONT and restarts are real.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drasched.api import kinds
from drasched.api.errors import AlreadyExists, ApiError, NotFound
from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster, ensure_namespace, free_port

Obj = dict[str, Any]

LONG = os.environ.get("DRASCHED_FAULTS_LONG", "") not in ("", "0")
"""The issue-sized runs (500 DRA pods, 20 kills) instead of the CI-sized ones."""

NAMESPACE = "burst"
DRIVER = "gpu.example.com"
DEVICES_PER_NODE = 4
QUEUE = "q"
GPU = "nvidia.com/gpu"
SERVE_USERS = {f"serve-{i}": f"drasched-serve-{i}-token" for i in range(2)}
"""One API-server identity per replica: the audit log names the replica of every write."""
LEASE = ("--leader-elect-lease-duration", "4", "--leader-elect-renew-deadline", "3",
         "--leader-elect-retry-period", "1")
LEASE_DURATION = 4.0
RETRY_PERIOD = 1.0
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  verbs: [get, list, watch]
- level: Metadata
"""
SETTLE_QUIET = 7.0
"""Seconds without a change before the cluster counts as settled: longer than serve's idle
cycle period (5 s), after which the scheduler refreshes queue statuses once more."""
SETTLE_TIMEOUT = 600.0 if LONG else 240.0


@dataclass(frozen=True)
class Size:
    nodes: int
    pods: int
    kills: int


SIZE = Size(nodes=100, pods=500, kills=20) if LONG else Size(nodes=8, pods=40, kills=3)
"""Pods outnumber devices (nodes x 4): some always stay pending, with a reason."""


def fault_cluster(tmp: Path, watch_cache: bool = True) -> LocalCluster:
    """A LocalCluster with the serve users and an audit log of every write (not yet entered)."""
    policy = tmp / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    args = [f"--audit-policy-file={policy}", f"--audit-log-path={tmp / 'audit.log'}",
            "--audit-log-maxsize=0"]
    if not watch_cache:
        args.append("--watch-cache=false")
    return LocalCluster(extra_args=args, users=SERVE_USERS)


# ----------------------------------------------------------------------- the workload


def create_inventory(store: KubeStore, nodes: int) -> None:
    """DRA-only Ready nodes with one ResourceSlice each, the DeviceClass, Queue and template."""
    ensure_namespace(store, NAMESPACE)
    for i in range(nodes):
        name = f"n{i:03d}"
        node = store.create({"apiVersion": "v1", "kind": "Node",
                             "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}})
        # No kubelet: lift the not-ready taint TaintNodesByCondition put on, report Ready.
        node.setdefault("spec", {})["taints"] = [
            t for t in node["spec"].get("taints") or [] if not str(t.get("key", "")).startswith("node.kubernetes.io/")]
        node = store.update(node)
        node["status"] = {
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "no kubelet in this test: marked ready"}],
        }
        store.update_status(node)
        store.create(slice_for(name, generation=1))
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
                  "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
                           "extendedResourceName": GPU}})
    store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": QUEUE},
                  "spec": {"resources": {GPU: {"quota": str(nodes * DEVICES_PER_NODE)}}}})
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                  "metadata": {"name": "one-gpu", "namespace": NAMESPACE},
                  "spec": {"spec": {"devices": {"requests": [
                      {"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": 1}}]}}}})


def slice_for(node: str, generation: int) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{d}"} for d in range(DEVICES_PER_NODE)]}}


def pod(i: int) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p{i:04d}", "namespace": NAMESPACE, "labels": {"drasched.io/queue": QUEUE}},
            "spec": {"schedulerName": "drasched",
                     "containers": [{"name": "main", "image": "registry.example/app:1",
                                     "resources": {"requests": {"cpu": "100m"}, "claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}}


def create_burst(store: KubeStore, count: int, pause: float = 0.0) -> None:
    """``count`` DRA pods, one after another (``pause`` seconds apart), as a Job would; a
    create that fails (the API server restarting) is retried, as the Job controller does."""
    for i in range(count):
        while True:
            try:
                store.create(pod(i))
                break
            except AlreadyExists:  # created, though the answer was lost
                break
            except ApiError:
                time.sleep(0.5)
        if pause:
            time.sleep(pause)


# ----------------------------------------------------------------------- serve replicas


class Replica:
    """One ``drasched serve`` replica as a subprocess: start, kill -9, pause, restart.

    Its output of every incarnation goes to one log file; ``kills`` and ``starts`` count.
    """

    def __init__(self, cluster: LocalCluster, user: str, log: Path, server: str | None = None,
                 leader_elect: bool = True) -> None:
        self.user = user
        self.log = log
        self.kubeconfig = cluster.kubeconfig_for(user, server)
        self.leader_elect = leader_elect
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.kills = 0
        self.stopped = False
        """Stopped for good by the test: a Supervisor leaves it down."""

    def start(self) -> None:
        args = [str(Path(sys.executable).parent / "drasched"), "serve", "--kubeconfig", self.kubeconfig,
                "--enable-claim-controller", "--metrics-port", str(free_port()), "--bind-address", "127.0.0.1",
                *(LEASE if self.leader_elect else ("--no-leader-elect",))]
        with open(self.log, "ab") as f:
            f.write(f"--- start {self.starts} at {time.time():.3f} ---\n".encode())
            self.proc = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.starts += 1

    def kill(self) -> None:
        """kill -9: no lease release, no cleanup, writes in flight cut where they are."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.kills += 1

    def pause(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM (releases the lease), SIGKILL if it does not end."""
        self.stopped = True
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGCONT)
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""


class Supervisor:
    """Restarts a replica whenever it exits, as the kubelet does a Deployment's container
    (``restartPolicy: Always``): serve exits 1 when it loses its lease, by design."""

    def __init__(self, replicas: list[Replica]) -> None:
        self.replicas = replicas
        self.restarts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="supervisor")

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            for r in self.replicas:
                if r.proc is not None and not r.stopped and not r.running() and not self._stop.is_set():
                    r.start()
                    self.restarts += 1

    def __enter__(self) -> Supervisor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def lease_holder(store: KubeStore) -> str:
    try:
        lease = store.get(kinds.LEASE, "drasched", "kube-system")
    except NotFound:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def wait_for(what: str, check: Any, timeout: float = 120.0, step: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ApiError, OSError):
            got = check()
            if got:
                return got
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


# ----------------------------------------------------------------------- settling


def _decided(p: Obj) -> bool:
    if (p.get("spec") or {}).get("nodeName"):
        return True
    conds = (p.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False" for c in conds)


def _fingerprint(store: KubeStore) -> tuple[Any, ...]:
    parts = []
    for rt in (kinds.POD, kinds.RESOURCE_CLAIM, kinds.QUEUE, kinds.BIND_REQUEST):
        parts.append(tuple(sorted((o["metadata"].get("namespace", ""), o["metadata"]["name"],
                                   o["metadata"].get("resourceVersion")) for o in store.list(rt).items)))
    return tuple(parts)


def settle(store: KubeStore, pods: int, timeout: float = SETTLE_TIMEOUT) -> None:
    """Until (at least ``pods``) pods of the burst are there, each bound or marked
    unschedulable, and nothing changed for ``SETTLE_QUIET`` seconds."""
    deadline = time.monotonic() + timeout
    last: tuple[Any, ...] = ()
    since = time.monotonic()
    while time.monotonic() < deadline:
        try:
            now = _fingerprint(store)
            listed = store.list(kinds.POD, NAMESPACE).items
        except (ApiError, OSError):
            time.sleep(0.5)
            continue
        if now != last:
            last, since = now, time.monotonic()
        elif len(listed) >= pods and all(_decided(p) for p in listed) and time.monotonic() - since >= SETTLE_QUIET:
            return
        time.sleep(0.5)
    raise AssertionError(f"the cluster did not settle in {timeout} s")


# ----------------------------------------------------------------------- the audit log


@dataclass
class AuditEntry:
    user: str
    verb: str
    resource: str
    name: str
    code: int
    received: float
    """requestReceivedTimestamp, seconds since the epoch."""


def _epoch(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def read_audit(tmp: Path) -> list[AuditEntry]:
    """The writes the API server saw (the policy logs no reads), with who made each."""
    entries = []
    for path in sorted(tmp.glob("audit*.log")):
        for line in path.read_text(errors="replace").splitlines():
            if not line.strip():
                continue
            e = json.loads(line)
            ref = e.get("objectRef") or {}
            entries.append(AuditEntry(
                user=(e.get("user") or {}).get("username", ""), verb=e.get("verb", ""),
                resource=(ref.get("resource", "") + ("/" + ref["subresource"] if ref.get("subresource") else "")),
                name=f"{ref.get('namespace', '')}/{ref.get('name', '')}",
                code=int((e.get("responseStatus") or {}).get("code") or 0),
                received=_epoch(e["requestReceivedTimestamp"])))
    return entries


# ----------------------------------------------------------------------- invariants


@dataclass
class Report:
    """What a fault test found: counts for docs/reliability.md and the violations."""

    fault: str
    counts: dict[str, int] = field(default_factory=dict)
    violations: dict[str, list[str]] = field(default_factory=dict)

    def violation(self, invariant: str, detail: str) -> None:
        self.violations.setdefault(invariant, []).append(detail)

    def line(self) -> str:
        counts = " ".join(f"{k}={v}" for k, v in self.counts.items())
        total = sum(len(v) for v in self.violations.values())
        return f"FAULTS {self.fault}: {counts} invariant_violations={total}"


def check_invariants(store: KubeStore, report: Report, replicas: list[Replica], audit: list[AuditEntry]) -> None:
    """Read the server and record every broken invariant in ``report`` (and the counts)."""
    pods = {p["metadata"]["uid"]: p for p in store.list(kinds.POD).items}
    claims = store.list(kinds.RESOURCE_CLAIM).items
    slices = store.list(kinds.RESOURCE_SLICE).items
    inventory = {(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])
                 for s in slices for d in s["spec"].get("devices") or []}
    claim_by_key = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in claims}

    holder: dict[tuple[str, str, str], str] = {}
    for c in claims:
        key = f"{c['metadata']['namespace']}/{c['metadata']['name']}"
        status = c.get("status") or {}
        for r in ((status.get("allocation") or {}).get("devices") or {}).get("results") or []:
            dev = (r["driver"], r["pool"], r["device"])
            if dev not in inventory:
                report.violation("allocated device not in any slice", f"{key}: {dev}")
            if dev in holder:
                report.violation("device allocated to two claims", f"{dev}: {holder[dev]} and {key}")
            holder[dev] = key
        for ref in status.get("reservedFor") or []:
            if ref.get("resource") == "pods" and ref.get("uid") not in pods:
                report.violation("claim reserved for a pod that no longer exists", f"{key}: {ref.get('name')}")
        owner = next((o for o in c["metadata"].get("ownerReferences") or []
                      if o.get("kind") == "Pod" and o.get("controller")), None)
        if owner is not None and owner["uid"] not in pods:
            report.violation("generated claim without its pod", f"{key}: owner {owner['name']}")

    bound = 0
    for p in pods.values():
        md, spec = p["metadata"], p.get("spec") or {}
        if spec.get("schedulerName") != "drasched":
            continue
        key = f"{md['namespace']}/{md['name']}"
        node = spec.get("nodeName")
        if not node:
            conds = (p.get("status") or {}).get("conditions") or []
            if not any(c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason")
                       for c in conds):
                report.violation("pending pod without a PodScheduled=False reason", key)
            continue
        bound += 1
        statuses = {s["name"]: s.get("resourceClaimName")
                    for s in (p.get("status") or {}).get("resourceClaimStatuses") or []}
        for rc in spec.get("resourceClaims") or []:
            name = rc.get("resourceClaimName") or statuses.get(rc["name"])
            claim = claim_by_key.get((md["namespace"], name)) if name else None
            if claim is None:
                report.violation("bound pod without its claim", f"{key}: {rc['name']}")
                continue
            status = claim.get("status") or {}
            if not status.get("allocation"):
                report.violation("bound pod with an unallocated claim", f"{key}: {name}")
            if md["uid"] not in {r.get("uid") for r in status.get("reservedFor") or []}:
                report.violation("bound pod whose claim is not reserved for it", f"{key}: {name}")
            pools = {r["pool"] for r in ((status.get("allocation") or {}).get("devices") or {}).get("results") or []}
            if pools and pools != {node}:
                report.violation("bound pod on another node than its devices", f"{key}: {node} vs {pools}")

    queue = store.get(kinds.QUEUE, QUEUE)
    allocated = str(((queue.get("status") or {}).get("allocated") or {}).get(GPU, "0"))
    if allocated != str(bound):
        report.violation("queue status inconsistent with the pods", f"allocated {GPU}={allocated}, bound pods={bound}")

    serve_users = {r.user for r in replicas}
    serve_writes = [e for e in audit if e.user in serve_users]
    for e in serve_writes:
        if e.code in (400, 422):
            report.violation("write refused as invalid by the server",
                             f"{e.user} {e.verb} {e.resource} {e.name}: {e.code}")
    for r in replicas:
        for exc in unexpected_exceptions(r.log_text()):
            report.violation("exception in serve's log", f"{r.user}: {exc[:200]}")

    report.counts.update({
        "pods": sum(1 for p in pods.values() if (p.get("spec") or {}).get("schedulerName") == "drasched"),
        "pods_placed": bound,
        "devices": len(inventory),
        "claims_allocated": len(holder),
        "serve_writes": sum(1 for e in serve_writes if e.code < 300),
        "conflicts_resolved": sum(1 for e in serve_writes if e.code == 409),
        # every relist after a first list, whatever broke the watch (410 Gone, or a watch
        # that kept failing while the API server was away)
        "relists": sum(r.log_text().count(" informer: relisted (") for r in replicas),
        "watch_reconnects": sum(r.log_text().count("reflector: watch failed") for r in replicas),
        "serve_starts": sum(r.starts for r in replicas),
        "kills_survived": sum(r.kills for r in replicas),
    })


EXPECTED_EXCEPTIONS = ("drasched.serve.fencing.LeadershipLost",)
"""Tracebacks that are the fence doing its job: a write refused once the lease is lost."""
HANDLED = ("reflector: watch failed", "informer: list failed")
"""Log lines whose traceback is a failure handled by retrying with backoff (a watch or list
cut by the fault): the informer goes on, nothing is lost."""


def unexpected_exceptions(log_text: str) -> list[str]:
    """The final line of every traceback in a serve log, except the handled and expected
    ones: what is left is a controller round that failed on a bug, a thread that died, or
    a crash."""
    found = []
    lines = log_text.splitlines()
    handled = False  # the traceback before, for the next one of a chain
    for i, ln in enumerate(lines):
        if not ln.startswith("Traceback (most recent call last):"):
            continue
        before = next((x for x in reversed(lines[:i]) if x.strip()), "")
        chained = before.startswith(("The above exception", "During handling"))
        handled = (handled and chained) or any(h in before for h in HANDLED)
        if handled:
            continue
        rest = [x for x in lines[i + 1:] if x and not x.startswith(" ")]
        last = rest[0] if rest else ""
        if len(rest) > 1 and rest[1].startswith(("The above exception", "During handling")):
            continue  # a chained exception: the next traceback names the final one
        if not last.startswith(EXPECTED_EXCEPTIONS):
            found.append(last)
    return found


def finish(report: Report) -> None:
    """Print the counts (``pytest -s`` shows them) and fail on any violation."""
    print(report.line(), flush=True)
    for invariant, details in report.violations.items():
        print(f"  {invariant}: {len(details)}: {details[:5]}", flush=True)
    assert not report.violations, report.line() + "\n" + "\n".join(
        f"{k}: {len(v)}: {v[:5]}" for k, v in report.violations.items())
