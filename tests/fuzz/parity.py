"""Acceptance parity: does drasched accept only what a real kube-apiserver accepts?

One seed names one input: an example or scenario file (one that simulate accepts as it is),
one object of it of a kind the test server validates, and one to three breakages of that
object (``tests.fuzz.mutate``). drasched judges the whole broken file as ``drasched
simulate`` loads it (reader, decode, defaults, validation, then the memory store's creates
in dependency order); the API server judges the broken object alone, created with
``dryRun=All`` and ``fieldValidation=Strict`` (as ``kubectl create`` sends it), with the
file's Namespaces and PriorityClasses in place, the only other objects a create consults.
An object refused only for unknown fields (drasched keeps them, as the server's default
``fieldValidation=Warn`` would) is judged again with ``Ignore`` and counted apart.

The verdicts compared: the server refuses (400, 403, 404, 422) and drasched must refuse
too, naming the broken document; drasched refusing what the server accepts is counted,
not failed (drasched also judges the rest of the file, which a renamed object can break).
A 409 AlreadyExists means the server's validation passed (a dry run still looks the name
up) and counts as accepted.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import dataclasses
import json
import random
import re
import ssl
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import httpx

from drasched.api import kinds
from drasched.api.errors import ApiError, NotFound
from drasched.api.manifest import ManifestError, load_paths
from drasched.sim.runner import Simulation, SimulationError
from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster, ensure_namespace
from drasched.testing.served import as_served
from tests.fuzz.mutate import DEEP_2000, DEEP_5000, ROOT, Obj, corpus, mutate, write
from tests.scenarios.runner import load_scenario

UPSTREAM_GANG = frozenset({"Workload", "PodGroup"})
"""The upstream gang API (scheduling.k8s.io), which drasched translates rather than serves.
Not a mutation target: the translation reads what it needs and warns about the rest instead
of validating these objects as the API server does (a known gap, docs/testing.md)."""

CONTEXT_KINDS = ("Namespace", "PriorityClass", "RuntimeClass")
"""The only objects another object's create consults on the server: its namespace (and the
namespace's admin-access label), PriorityClasses (the Priority admission plugin) and
RuntimeClasses (the RuntimeClass admission plugin)."""
CLASS_KINDS = {"PriorityClass": kinds.PRIORITY_CLASS, "RuntimeClass": kinds.RUNTIME_CLASS}


@dataclass(frozen=True)
class Case:
    """One seed's input: ``docs`` with document ``index`` broken."""

    seed: int
    origin: str
    original: tuple[Obj, ...]
    docs: list[Obj]
    index: int

    @property
    def target(self) -> Obj:
        return self.docs[self.index]


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    messages: tuple[str, ...] = ()
    code: int = 0


def served_type(obj: Obj) -> kinds.ResourceType | None:
    """Where the object's kind is created on the test server (kubectl maps the kind first);
    None for a kind that is no mutation target: other projects' CRDs (the test server does
    not serve them) and the upstream gang API (``UPSTREAM_GANG``)."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if str(api_version).startswith("scheduling.k8s.io/") and kind in UPSTREAM_GANG:
        return None
    try:
        rt = kinds.for_object(obj)
    except ApiError:
        return None
    return None if rt.group.endswith(".x-k8s.io") else rt


def _eligible(doc: Obj) -> bool:
    return served_type(doc) is not None


@cache
def accepted_files() -> tuple[tuple[str, tuple[Obj, ...]], ...]:
    """The corpus less the scenarios that expect simulate to refuse their input."""
    out = []
    for name, docs in corpus():
        path = ROOT / name
        if name.startswith("tests/scenarios/") and load_scenario(path).exit_code == 2:
            continue
        if any(_eligible(d) for d in docs):
            out.append((name, docs))
    return tuple(out)


def case(seed: int) -> Case:
    rnd = random.Random(seed)
    name, docs = rnd.choice(accepted_files())
    index = rnd.choice([i for i, d in enumerate(docs) if _eligible(d)])
    broken = copy.deepcopy(list(docs))
    broken[index] = mutate((docs[index],), rnd, rnd.choice([1, 1, 2, 3]))[0]
    return Case(seed, name, docs, broken, index)


# -- drasched's verdict -------------------------------------------------------------------------


def drasched_verdict(docs: list[Obj], tmp: Path) -> Verdict:
    """What ``drasched simulate`` says about the file before it simulates anything."""
    path = tmp / "input.yaml"
    write(docs, path)
    try:
        loaded = load_paths([str(path)])
        Simulation(controllers=[]).load([i.obj for i in loaded], [i.where for i in loaded])
    except ManifestError as exc:
        return Verdict(False, (str(exc),))
    except SimulationError as exc:
        return Verdict(False, tuple(exc.errors))
    return Verdict(True)


def names_document(verdict: Verdict, index: int, multi_doc: bool) -> bool:
    """A refusal names the broken document (``document N: Kind ns/name: field: why``); a file
    written as one JSON List (too deep for YAML) numbers every item 0."""
    want = index if multi_doc else 0
    return any(re.search(rf": document {want}: \S+ .*: .+", m) or READER_REFUSAL.search(m) for m in verdict.messages)


READER_REFUSAL = re.compile(r"\.yaml: (line \d+ column \d+: malformed|nested too deeply)")
"""Refused by the YAML/JSON reader, before there are documents: the line and column say where."""


# -- the server's verdict -----------------------------------------------------------------------


def wire_text(obj: Obj) -> str:
    """JSON as kubectl sends it; the deep-nesting placeholders become the nesting itself."""
    text = json.dumps(obj)
    for marker, depth in ((DEEP_2000, 2000), (DEEP_5000, 5000)):
        text = text.replace(json.dumps(marker), "[" * depth + "1" + "]" * depth)
    return text


class Server:
    """The real API server, holding one file's context objects at a time."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.store: KubeStore = cluster.store()
        self.http = httpx.Client(base_url=cluster.url, verify=ssl.create_default_context(cafile=cluster.ca_file),
                                 timeout=60,
                                 headers={"Authorization": f"Bearer {cluster.token}",
                                          "Content-Type": "application/json", "User-Agent": "drasched-parity"})
        self.served = cluster.served
        self.classes: dict[tuple[str, str], Obj] = {}
        """The context's PriorityClasses and RuntimeClasses, by (kind, name)."""
        self.unknown_fields = 0
        """Bodies refused only under ``fieldValidation=Strict`` (unknown or duplicate fields)."""
        ensure_namespace(self.store, "default")

    def close(self) -> None:
        self.http.close()

    def use_context(self, docs: Iterable[Obj]) -> None:
        """Make the server's Namespaces (labels), PriorityClasses and RuntimeClasses those of ``docs``."""
        docs = list(docs)
        wanted = {(d["kind"], d["metadata"]["name"]): d for d in docs if d.get("kind") in CLASS_KINDS}
        for d in docs:
            if d.get("kind") == "Namespace":
                self._namespace(d)  # never deleted (no namespace controller here): kept, relabelled
        if wanted == self.classes:
            return
        gone = [key for key in self.classes if wanted.get(key) != self.classes[key]]
        for kind, name in gone:
            with contextlib.suppress(NotFound):
                self.store.delete(CLASS_KINDS[kind], name)
        for key, obj in wanted.items():
            if self.classes.get(key) != obj:
                self.store.create({k: v for k, v in obj.items() if k != "status"})
        self.classes = dict(wanted)
        # the RuntimeClass plugin asks the server when its informer misses a class: no wait for those
        self._wait_for_admission([name for kind, name in gone if kind == "PriorityClass"])

    def _namespace(self, doc: Obj) -> None:
        name = doc["metadata"]["name"]
        ensure_namespace(self.store, name)
        live = self.store.get(kinds.NAMESPACE, name)
        labels = {**(live["metadata"].get("labels") or {}), **(doc["metadata"].get("labels") or {})}
        if labels != (live["metadata"].get("labels") or {}):
            live["metadata"]["labels"] = labels
            self.store.update(live)

    def _wait_for_admission(self, gone: list[str]) -> None:
        """The Priority admission plugin reads classes from an informer: wait until it has
        every wanted class and none of the deleted ones."""
        classes = [name for kind, name in self.classes if kind == "PriorityClass"]
        for _ in range(200):
            seen = {n: self._admits_class(n) for n in [*classes, *gone]}
            if all(seen[n] for n in classes) and not any(seen[n] for n in gone if n not in classes):
                return
            time.sleep(0.05)
        raise AssertionError(f"the Priority admission plugin never saw the classes {sorted(classes)}")

    def _admits_class(self, name: str) -> bool:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": "default"},
               "spec": {"priorityClassName": name, "containers": [{"name": "c", "image": "x"}]}}
        resp = self.http.post("/api/v1/namespaces/default/pods", params={"dryRun": "All"}, content=json.dumps(pod))
        return resp.status_code != 403

    def verdict(self, original: Obj, broken: Obj) -> Verdict:
        """Create ``broken`` where ``original``'s kind lives, as a dry run."""
        rt = served_type(original)
        assert rt is not None
        md = broken.get("metadata")
        ns = md.get("namespace") if isinstance(md, dict) else None
        if not isinstance(ns, str) or not ns:
            ns = (original.get("metadata") or {}).get("namespace") or "default"
        # a kind that moved between releases (DeviceTaintRule) goes where this server serves it
        version = as_served(original, self.served)["apiVersion"].rsplit("/", 1)[-1]
        path = dataclasses.replace(rt, version=version).api_path(ns)
        body = broken
        if (broken.get("apiVersion"), broken.get("kind")) == (original["apiVersion"], original["kind"]):
            body = as_served(broken, self.served)
        content = wire_text(body).encode()
        resp = self.http.post(path, params={"dryRun": "All", "fieldValidation": "Strict"}, content=content)
        if resp.status_code == 400 and "strict decoding error" in resp.text:
            self.unknown_fields += 1  # drasched keeps unknown fields, as the server's default (Warn) would take them
            resp = self.http.post(path, params={"dryRun": "All", "fieldValidation": "Ignore"}, content=content)
        if resp.is_success or resp.status_code == 409:
            return Verdict(True, code=resp.status_code)
        try:
            status = resp.json()
        except ValueError:
            status = {"message": resp.text[:300]}
        causes = tuple(f"{c.get('field')}: {c.get('message')}" for c in (status.get("details") or {}).get("causes")
                       or ()) if isinstance(status, dict) else ()
        message = str(status.get("message") if isinstance(status, dict) else status)
        return Verdict(False, (message[:600], *causes), resp.status_code)


# -- one run ------------------------------------------------------------------------------------


@dataclass
class Tally:
    inputs: int = 0
    both_accept: int = 0
    both_refuse: int = 0
    server_only_refuses: list[str] = field(default_factory=list)
    """Accepted by drasched although the API server refuses: the failures."""
    unnamed: list[str] = field(default_factory=list)
    """Refused by both, but drasched's message does not name the broken document."""
    drasched_only_refuses: collections.Counter[str] = field(default_factory=collections.Counter)
    """What drasched refuses and the server accepts, by the first words of drasched's reason."""
    drasched_only_examples: dict[str, int] = field(default_factory=dict)
    other_document: int = 0
    """drasched refused another document of the file (a renamed class, namespace, template)."""
    baseline: list[str] = field(default_factory=list)
    """Unbroken objects the server refused: the context is wrong, nothing else can be trusted."""
    server_codes: collections.Counter[int] = field(default_factory=collections.Counter)
    unknown_fields: int = 0
    """Objects the server refuses under ``fieldValidation=Strict`` only (judged again with ``Ignore``)."""

    def summary(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs, "both_accept": self.both_accept, "both_refuse": self.both_refuse,
            "accepted_by_drasched_refused_by_server": len(self.server_only_refuses),
            "refused_by_drasched_accepted_by_server": sum(self.drasched_only_refuses.values()) + self.other_document,
            "of_which_another_document": self.other_document,
            "refusals_not_naming_the_document": len(self.unnamed),
            "server_answers": dict(sorted(self.server_codes.items())),
            "unknown_fields_refused_only_by_strict": self.unknown_fields,
            "drasched_only_reasons": {reason: {"inputs": n, "first_seed": self.drasched_only_examples[reason]}
                                      for reason, n in self.drasched_only_refuses.most_common()},
        }


def _reason(message: str) -> str:
    """The rule a refusal names, without the file, document and values: for counting."""
    tail = re.sub(r"^.*?: document \d+: ", "", message)
    tail = re.sub(r"\[\d+\]", "[*]", tail)
    tail = re.sub(r'"[^"]*"', '"…"', tail)
    tail = re.sub(r"-?\d+", "N", tail)
    return tail[:110]


def run(seeds: Iterable[int], cluster: LocalCluster) -> Tally:
    """Every seed's input judged by both; seeds grouped by file so context changes are rare."""
    cases = sorted((case(s) for s in seeds), key=lambda c: (c.origin, c.index, c.seed))
    tally = Tally()
    server = Server(cluster)
    checked_baseline: set[tuple[str, int]] = set()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for c in cases:
                server.use_context(d for i, d in enumerate(c.original) if i != c.index and d.get("kind") in
                                   CONTEXT_KINDS)
                if (c.origin, c.index) not in checked_baseline:
                    checked_baseline.add((c.origin, c.index))
                    base = server.verdict(c.original[c.index], c.original[c.index])
                    if not base.accepted:
                        tally.baseline.append(f"{c.origin} document {c.index}: {base.messages}")
                        continue
                _judge(c, server, Path(tmp), tally)
    finally:
        tally.unknown_fields = server.unknown_fields
        server.close()
    return tally


def _judge(c: Case, server: Server, tmp: Path, tally: Tally) -> None:
    tally.inputs += 1
    ours = drasched_verdict(c.docs, tmp)
    theirs = server.verdict(c.original[c.index], c.target)
    tally.server_codes[theirs.code] += 1
    label = f"seed {c.seed} ({c.origin}, document {c.index}, {c.original[c.index].get('kind')})"
    multi_doc = not (tmp / "input.yaml").read_text(encoding="utf-8").startswith("{")  # not one JSON List
    if theirs.accepted and ours.accepted:
        tally.both_accept += 1
    elif not theirs.accepted and not ours.accepted:
        tally.both_refuse += 1
        if not names_document(ours, c.index, multi_doc):
            tally.unnamed.append(f"{label}: server {theirs.messages[0]!r}; drasched {ours.messages[:2]}")
    elif not theirs.accepted:
        tally.server_only_refuses.append(f"{label}: server {theirs.code}: {' | '.join(theirs.messages)[:700]}")
    elif names_document(ours, c.index, multi_doc):
        reason = _reason(next(m for m in ours.messages if f"document {c.index if multi_doc else 0}:" in m))
        tally.drasched_only_refuses[reason] += 1
        tally.drasched_only_examples.setdefault(reason, c.seed)
    else:
        tally.other_document += 1
