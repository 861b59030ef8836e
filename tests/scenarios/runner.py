"""Scenario files: Kubernetes manifests in, final objects out, checked against an Expect block.

A scenario is one multi-document YAML file. One document has
``apiVersion: test.drasched.io/v1, kind: Scenario`` with ``description`` and ``expect``;
every other document is an ordinary object. The objects run through ``drasched simulate``
(the CLI entry point, as a user would run it) and the final state is compared.
"""

from __future__ import annotations

import io
from contextlib import redirect_stderr
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from drasched.cli import main as cli_main

Obj = dict[str, Any]
SCENARIO_API = "test.drasched.io/v1"


@dataclass
class Scenario:
    path: Path
    description: str
    expect: dict[str, Any]
    manifests: list[Obj]
    exit_code: int = 0
    stderr_contains: tuple[str, ...] = ()
    """Fragments simulate's error output must hold (a refused input names what it refuses)."""


class ScenarioError(ValueError):
    """A scenario file that cannot be checked as written (a typo in ``expect``, an empty message)."""


def load_scenario(path: Path) -> Scenario:
    """Read a scenario file; raises :class:`ScenarioError` listing every problem of its head."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    heads = [d for d in docs if d.get("apiVersion") == SCENARIO_API and d.get("kind") == "Scenario"]
    if len(heads) != 1:
        raise ScenarioError(f"{path}: needs exactly one Scenario document, found {len(heads)}")
    head = heads[0]
    problems = head_problems(head)
    if problems:
        raise ScenarioError(f"{path}:\n  " + "\n  ".join(problems))
    return Scenario(path, head["description"], head.get("expect") or {},
                    [d for d in docs if d is not head], int(head.get("exitCode", 0)),
                    tuple(head.get("stderrContains") or ()))


HEAD_KEYS = frozenset({"apiVersion", "kind", "description", "expect", "exitCode", "stderrContains"})

EXPECT_KEYS: dict[str, frozenset[str]] = {
    "pods": frozenset({"node", "nodeIn", "unschedulable", "phase", "fields", "absent"}),
    "claims": frozenset({"allocated", "devices", "deviceCount", "reservedFor", "nodeSelectorNode", "fields",
                         "absent"}),
    "claimsByPrefix": frozenset({"count", "fields"}),
    "events": frozenset({"object", "reason", "type", "messageContains", "count", "absent"}),
    "queues": frozenset({"allocated", "requested", "fairShare", "valid", "conditionContains"}),
    "objects": frozenset({"fields", "absent"}),
}
"""Every key an ``expect`` section's entries may hold: anything else is a typo that would check nothing."""

MESSAGE_KEYS = frozenset({"unschedulable", "messageContains", "conditionContains"})
"""Keys matched as substrings: an empty one matches every message, so it asserts nothing."""


def head_problems(head: Obj) -> list[str]:
    """What is wrong with a Scenario document: unknown keys, empty messages, reasonless pending pods."""
    problems = [f"unknown key {k!r} in the Scenario document" for k in sorted(set(head) - HEAD_KEYS)]
    if not str(head.get("description") or "").strip():
        problems.append("description: empty")
    expect = head.get("expect") or {}
    if not isinstance(expect, dict):
        return [*problems, "expect: must be a mapping"]
    for section in sorted(expect):
        allowed = EXPECT_KEYS.get(section)
        if allowed is None:
            problems.append(f"expect.{section}: unknown section (known: {', '.join(sorted(EXPECT_KEYS))})")
            continue
        body = expect[section]
        entries = list(enumerate(body)) if isinstance(body, list) else list((body or {}).items())
        for name, want in entries:
            where = f"expect.{section}[{name}]"
            if not isinstance(want, dict):
                problems.append(f"{where}: must be a mapping")
                continue
            problems += [f"{where}: unknown key {k!r} (known: {', '.join(sorted(allowed))})"
                         for k in sorted(set(want) - allowed)]
            problems += [f"{where}.{k}: empty message matches anything"
                         for k in sorted(MESSAGE_KEYS & set(want)) if not str(want[k] or "").strip()]
            if section == "pods" and _expects_pending(want) and "unschedulable" not in want:
                problems.append(f"{where}: a pod expected pending must name why (unschedulable: <message>)")
    return problems


def _expects_pending(want: Obj) -> bool:
    """The pod is expected unbound: ``node: null``, or phase Pending with no node named."""
    if want.get("absent"):
        return False
    if "node" in want and want["node"] is None:
        return True
    return want.get("phase") == "Pending" and not want.get("node") and not want.get("nodeIn")


def run_scenario(scn: Scenario, tmp: Path) -> tuple[int, dict[str, Obj], str]:
    """Run ``drasched simulate`` on the scenario's manifests; return (exit code, objects by key, stderr)."""
    src = tmp / f"{scn.path.stem}.yaml"
    src.write_text(yaml.safe_dump_all(scn.manifests, sort_keys=False))
    out = tmp / f"{scn.path.stem}.out.yaml"
    err = io.StringIO()
    with redirect_stderr(err):
        code = cli_main(["simulate", str(src), "--output", str(out), "--include-events"])
    objects: dict[str, Obj] = {}
    if out.exists():
        for o in yaml.safe_load_all(out.read_text()):
            if o:
                md = o.get("metadata") or {}
                ns = md.get("namespace")
                objects[f"{o['kind']}:{ns + '/' if ns else ''}{md.get('name')}"] = o
    return code, objects, err.getvalue()


def _pod_scheduled_message(pod: Obj) -> str:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("message", ""))
    return ""


def _device_key(d: Obj) -> tuple[str, str, str, str]:
    return (d.get("request", ""), d.get("driver", ""), d.get("pool", ""), d.get("device", ""))


def check_expectations(scn: Scenario, objects: dict[str, Obj]) -> list[str]:
    """Compare the final objects with the scenario's ``expect`` block; return every mismatch."""
    problems: list[str] = []
    exp = scn.expect
    for key, want in (exp.get("pods") or {}).items():
        pod = objects.get(f"Pod:{key}")
        if pod is None:
            if want.get("absent"):
                continue
            problems.append(f"pod {key}: missing from the output")
            continue
        if want.get("absent"):
            problems.append(f"pod {key}: expected to be gone, still present")
            continue
        node = (pod.get("spec") or {}).get("nodeName")
        msg = _pod_scheduled_message(pod)
        if "node" in want and node != want["node"]:
            problems.append(f"pod {key}: expected on node {want['node']!r}, got {node!r} ({msg})")
        if "nodeIn" in want and node not in want["nodeIn"]:
            problems.append(f"pod {key}: expected on one of {want['nodeIn']}, got {node!r} ({msg})")
        if "unschedulable" in want:
            if node:
                problems.append(f"pod {key}: expected unschedulable, got bound to {node!r}")
            elif want["unschedulable"] not in msg:
                problems.append(f"pod {key}: expected message containing {want['unschedulable']!r}, got {msg!r}")
        if "phase" in want and (pod.get("status") or {}).get("phase") != want["phase"]:
            problems.append(f"pod {key}: expected phase {want['phase']}, got {(pod.get('status') or {}).get('phase')}")
        for path, value in (want.get("fields") or {}).items():
            got = _dig(pod, path)
            if got != value:
                problems.append(f"pod {key}: {path} expected {value!r}, got {got!r}")
    for key, want in (exp.get("claims") or {}).items():
        claim = objects.get(f"ResourceClaim:{key}")
        if claim is None:
            if not want.get("absent"):
                problems.append(f"claim {key}: missing from the output")
            continue
        if want.get("absent"):
            problems.append(f"claim {key}: expected to be gone, still present")
            continue
        status = claim.get("status") or {}
        alloc = status.get("allocation")
        if "allocated" in want and bool(alloc) != bool(want["allocated"]):
            problems.append(f"claim {key}: expected allocated={want['allocated']}, got {bool(alloc)}")
        results = ((alloc or {}).get("devices") or {}).get("results") or []
        if "devices" in want:
            got_devs = sorted(_device_key(r) for r in results)
            want_devs = sorted(_device_key(d) for d in want["devices"])
            if got_devs != want_devs:
                problems.append(f"claim {key}: expected devices {want_devs}, got {got_devs}")
        if "deviceCount" in want and len(results) != want["deviceCount"]:
            problems.append(f"claim {key}: expected {want['deviceCount']} devices, got {len(results)}")
        if "reservedFor" in want:
            got_res = sorted(r.get("name", "") for r in status.get("reservedFor") or [])
            if got_res != sorted(want["reservedFor"]):
                problems.append(f"claim {key}: expected reservedFor {sorted(want['reservedFor'])}, got {got_res}")
        if "nodeSelectorNode" in want:
            sel = str((alloc or {}).get("nodeSelector"))
            if want["nodeSelectorNode"] not in sel:
                problems.append(f"claim {key}: nodeSelector {sel} does not pin {want['nodeSelectorNode']}")
        for path, value in (want.get("fields") or {}).items():
            got = _dig(claim, path)
            if got != value:
                problems.append(f"claim {key}: {path} expected {value!r}, got {got!r}")
    problems += _check_claims_by_prefix(exp.get("claimsByPrefix") or {}, objects)
    problems += _check_events(exp.get("events") or [], objects)
    problems += _check_queues(exp.get("queues") or {}, objects)
    for key, want in (exp.get("objects") or {}).items():
        obj = objects.get(key)
        if obj is None:
            if not want.get("absent"):
                problems.append(f"{key}: missing from the output")
            continue
        if want.get("absent"):
            problems.append(f"{key}: expected to be gone, still present")
            continue
        for path, value in (want.get("fields") or {}).items():
            got = _dig(obj, path)
            if got != value:
                problems.append(f"{key}: {path} expected {value!r}, got {got!r}")
    return problems


GENERATED_SUFFIX_LEN = 5  # generateName adds five random characters


def _check_claims_by_prefix(spec: dict[str, Any], objects: dict[str, Obj]) -> list[str]:
    """``claimsByPrefix: {ns/prefix: {count, fields}}``: claims named ``prefix`` + 5 random
    characters, i.e. created with exactly that ``generateName``; ``fields`` hold for each."""
    problems: list[str] = []
    for key, want in spec.items():
        ns, prefix = key.split("/", 1)
        found = [o for k, o in objects.items()
                 if k.startswith(f"ResourceClaim:{ns}/") and (name := k.split("/", 1)[1]).startswith(prefix)
                 and len(name) == len(prefix) + GENERATED_SUFFIX_LEN]
        if "count" in want and len(found) != want["count"]:
            names = sorted(o["metadata"]["name"] for o in found)
            problems.append(f"claims {key}*: expected {want['count']}, got {len(found)} {names}")
        for claim in found:
            for path, value in (want.get("fields") or {}).items():
                got = _dig(claim, path)
                if got != value:
                    problems.append(f"claim {claim['metadata']['name']}: {path} expected {value!r}, got {got!r}")
    return problems


def _check_events(spec: list[dict[str, Any]], objects: dict[str, Obj]) -> list[str]:
    """``events: [{object: Kind/ns/name, reason, type, messageContains, count, absent}]``.

    ``object`` may end in ``*`` to match a generated name by prefix. Without ``count`` at
    least one matching event must exist; ``absent: true`` asks for none.
    """
    problems: list[str] = []
    evs = [o for k, o in objects.items() if k.startswith("Event:")]
    for want in spec:
        def matches(ev: Obj, want: dict[str, Any] = want) -> bool:
            inv = ev.get("involvedObject") or {}
            ref = f"{inv.get('kind')}/{inv.get('namespace', '')}/{inv.get('name')}"
            target = str(want.get("object", ""))
            if target and not (ref.startswith(target[:-1]) if target.endswith("*") else ref == target):
                return False
            if "reason" in want and ev.get("reason") != want["reason"]:
                return False
            if "type" in want and ev.get("type") != want["type"]:
                return False
            return str(want.get("messageContains", "")) in str(ev.get("message", ""))
        n = sum(1 for ev in evs if matches(ev))
        if want.get("absent"):
            if n:
                problems.append(f"event {want}: expected none, found {n}")
        elif "count" in want:
            if n != want["count"]:
                problems.append(f"event {want}: expected {want['count']}, found {n}")
        elif n == 0:
            seen = sorted({f"{e.get('involvedObject', {}).get('name')}: {e.get('reason')}" for e in evs})
            problems.append(f"event {want}: none found (events: {seen})")
    return problems


def _check_queues(spec: dict[str, Any], objects: dict[str, Obj]) -> list[str]:
    """``queues: {name: {allocated|requested|fairShare: {resource: quantity}, valid, conditionContains}}``.

    Resource names hold dots (``nvidia.com/gpu``), so they are map keys here, not ``fields`` paths.
    Quantities compare as written by the scheduler (canonical form); ``null`` asks for no entry.
    """
    problems: list[str] = []
    for name, want in spec.items():
        queue = objects.get(f"Queue:{name}")
        if queue is None:
            problems.append(f"queue {name}: missing from the output")
            continue
        status = queue.get("status") or {}
        for table in ("allocated", "requested", "fairShare"):
            for res, value in (want.get(table) or {}).items():
                got = (status.get(table) or {}).get(res)
                if got != (None if value is None else str(value)):
                    problems.append(f"queue {name}: status.{table}[{res}] expected {value!r}, got {got!r}")
        cond = next((c for c in status.get("conditions") or [] if c.get("type") == "Valid"), {})
        if "valid" in want and (cond.get("status") == "True") != bool(want["valid"]):
            problems.append(f"queue {name}: expected Valid={want['valid']}, got {cond or None}")
        if "conditionContains" in want and str(want["conditionContains"]) not in str(cond.get("message", "")):
            problems.append(f"queue {name}: Valid message {cond.get('message')!r} lacks {want['conditionContains']!r}")
    return problems


def _dig(obj: Any, path: str) -> Any:
    """Follow a dotted path; ``[n]`` indexes lists, ``[k=v]`` picks the list item whose k is v."""
    cur = obj
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("["):
            inner = part[1:-1]
            if "=" in inner:
                k, v = inner.split("=", 1)
                cur = next((i for i in cur or [] if isinstance(i, dict) and str(i.get(k)) == v), None)
            else:
                cur = (cur or [None])[int(inner)] if isinstance(cur, list) and len(cur) > int(inner) else None
        else:
            cur = cur.get(part) if isinstance(cur, dict) else None
    return cur
