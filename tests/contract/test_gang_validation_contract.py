"""The upstream gang API's refusals (``scheduling.k8s.io/v1beta1`` Workload and PodGroup,
Kubernetes 1.37): every rule fed to the memory store and to a real kube-apiserver alike, word
for word, and to ``drasched simulate`` (exit 2, the field named). Also the Priority admission
plugin on a PodGroup, and what the server fills in.

The rules are declarative tags in ``k8s.io/api/scheduling/v1beta1`` (``+k8s:unionMember``,
``+k8s:maxItems``, ``+k8s:listType=map``, ``+k8s:minimum``) and
``pkg/apis/scheduling/validation`` (``validateWorkloadPriority``); the expected words are the
test server's (v1.37.2, the default). A 1.36 server serves v1alpha2 instead and fails the kube
half of this module.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from drasched.api import kinds
from drasched.api.errors import AlreadyExists, ApiError, Forbidden, Invalid, NotFound
from drasched.cli import main
from drasched.store.base import ClusterStore, Obj
from drasched.store.memory import MemoryStore
from drasched.testing.apiserver import LocalCluster, ensure_namespace
from tests.contract.test_validation_contract import Rule, at, causes, unique

GANG = {"gang": {"minCount": 2}}


def workload(ns: str, name: str) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
                     "podGroupTemplates": [{"name": "workers", "schedulingPolicy": copy.deepcopy(GANG)}]}}


def pod_group(ns: str, name: str) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"workloadRef": {"workloadName": "train", "templateName": "workers"},
                     "schedulingPolicy": copy.deepcopy(GANG)}}


def templates(*items: Obj) -> Callable[[Obj], None]:
    return at("spec.podGroupTemplates", list(items))


def template(name: str, **fields: Any) -> Obj:
    return {"name": name, "schedulingPolicy": copy.deepcopy(GANG), **fields}


LABEL = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"
SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'"
TMPL = "spec.podGroupTemplates[0]"
RULES = [
    # WorkloadSpec: templates given (compositePodGroupTemplates alone is dropped with its gate off)
    Rule("workload-without-templates", workload, templates(), "spec",
         'Invalid value: "": must specify one of: `podGroupTemplates`, `compositePodGroupTemplates`'),
    Rule("workload-composite-only", workload, lambda obj: obj["spec"].update(
         podGroupTemplates=None, compositePodGroupTemplates=[
             {"name": "all", "schedulingPolicy": {"gang": {"minGroupCount": 1}},
              "podGroupTemplates": [template("w")]}]),
         "spec", "must specify one of: `podGroupTemplates`, `compositePodGroupTemplates`"),
    Rule("workload-9-templates", workload, templates(*(template(f"t{i}") for i in range(9))),
         "spec.podGroupTemplates", "Too many: 9: must have at most 8 items"),
    Rule("workload-duplicate-template", workload, templates(template("a"), template("a")),
         "spec.podGroupTemplates[1]",
         'Duplicate value: {"name":"a","schedulingPolicy":{"gang":{"minCount":2}},"schedulingConstraints":null}'),
    Rule("workload-template-name", workload, templates(template("Workers")), f"{TMPL}.name",
         f'Invalid value: "Workers": {LABEL}'),
    Rule("workload-template-without-name", workload, templates({"schedulingPolicy": GANG}), f"{TMPL}.name",
         "Required value"),
    Rule("workload-template-without-policy", workload, templates({"name": "a"}), f"{TMPL}.schedulingPolicy",
         'Invalid value: "": must specify one of: `basic`, `gang`'),
    Rule("workload-template-two-policies", workload,
         templates({"name": "a", "schedulingPolicy": {"basic": {}, "gang": {"minCount": 1}}}),
         f"{TMPL}.schedulingPolicy", 'Invalid value: "{basic, gang}": must specify exactly one of: `basic`, `gang`'),
    Rule("workload-template-min-count-zero", workload, templates({"name": "a", "schedulingPolicy": {"gang": {}}}),
         f"{TMPL}.schedulingPolicy.gang.minCount", "Required value"),
    Rule("workload-template-two-topologies", workload,
         templates(template("a", schedulingConstraints={"topology": [{"key": "zone"}, {"key": "rack"}]})),
         f"{TMPL}.schedulingConstraints.topology", "Too many: 2: must have at most 1 item"),
    Rule("workload-template-topology-key", workload,
         templates(template("a", schedulingConstraints={"topology": [{"key": "bad key!"}]})),
         f"{TMPL}.schedulingConstraints.topology[0].key", 'Invalid value: "bad key!": name part must consist of'),
    Rule("workload-template-two-disruption-modes", workload,
         templates(template("a", disruptionMode={"single": {}, "all": {}})), f"{TMPL}.disruptionMode",
         'Invalid value: "{single, all}": must specify exactly one of: `single`, `all`'),
    Rule("workload-template-claim-two-sources", workload,
         templates(template("a", resourceClaims=[{"name": "gpu", "resourceClaimName": "x",
                                                   "resourceClaimTemplateName": "y"}])),
         f"{TMPL}.resourceClaims[0]", 'Invalid value: "{resourceClaimName, resourceClaimTemplateName}": must '
         "specify exactly one of: `resourceClaimName`, `resourceClaimTemplateName`"),
    Rule("workload-template-priority-class-name", workload, templates(template("a", priorityClassName="High_")),
         f"{TMPL}.priorityClassName", f'Invalid value: "High_": {SUBDOMAIN}'),
    Rule("workload-two-priorities", workload, templates(template("a", priority=5), template("b", priority=6)),
         "spec", "Invalid value: null: detected multiple priority configurations"),
    Rule("workload-controller-kind-with-slash", workload, at("spec.controllerRef.kind", "Jo/b"),
         "spec.controllerRef.kind", "Invalid value: \"Jo/b\": may not contain '/'"),
    Rule("workload-controller-without-name", workload, at("spec.controllerRef.name", ""),
         "spec.controllerRef.name", "Required value"),
    Rule("workload-controller-api-group", workload, at("spec.controllerRef.apiGroup", "Batch_"),
         "spec.controllerRef.apiGroup", f'Invalid value: "Batch_": {SUBDOMAIN}'),
    # PodGroupSpec
    Rule("group-without-policy", pod_group, at("spec.schedulingPolicy", None), "spec.schedulingPolicy",
         'Invalid value: "": must specify one of: `basic`, `gang`'),
    Rule("group-min-count-negative", pod_group, at("spec.schedulingPolicy.gang.minCount", -3),
         "spec.schedulingPolicy.gang.minCount", "Invalid value: -3: must be greater than or equal to 1"),
    Rule("group-workload-name", pod_group, at("spec.workloadRef.workloadName", "Train_"),
         "spec.workloadRef.workloadName", f'Invalid value: "Train_": {SUBDOMAIN}'),
    Rule("group-without-template-name", pod_group, at("spec.workloadRef.templateName", ""),
         "spec.workloadRef.templateName", "Required value"),
    Rule("group-topology-without-key", pod_group, at("spec.schedulingConstraints", {"topology": [{"key": ""}]}),
         "spec.schedulingConstraints.topology[0].key", "Required value"),
    Rule("group-topology-key-prefix", pod_group,
         at("spec.schedulingConstraints", {"topology": [{"key": "Bad_/zone"}]}),
         "spec.schedulingConstraints.topology[0].key", f'Invalid value: "Bad_/zone": prefix part {SUBDOMAIN}'),
    Rule("group-5-claims", pod_group,
         at("spec.resourceClaims", [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]),
         "spec.resourceClaims", "Too many: 5: must have at most 4 items"),
    Rule("group-duplicate-claim", pod_group,
         at("spec.resourceClaims", [{"name": "gpu", "resourceClaimName": "x"},
                                    {"name": "gpu", "resourceClaimTemplateName": "y"}]),
         "spec.resourceClaims[1]", 'Duplicate value: {"name":"gpu","resourceClaimTemplateName":"y"}'),
    Rule("group-claim-without-source", pod_group, at("spec.resourceClaims", [{"name": "gpu"}]),
         "spec.resourceClaims[0]", 'Invalid value: "": must specify one of: `resourceClaimName`, '
         "`resourceClaimTemplateName`"),
    Rule("group-claim-name", pod_group, at("spec.resourceClaims", [{"name": "GPU", "resourceClaimName": "x"}]),
         "spec.resourceClaims[0].name", f'Invalid value: "GPU": {LABEL}'),
    Rule("group-empty-disruption-mode", pod_group, at("spec.disruptionMode", {}), "spec.disruptionMode",
         'Invalid value: "": must specify one of: `single`, `all`'),
    Rule("group-system-priority", pod_group, at("spec.priorityClassName", "system-node-critical"),
         "spec.priority", "Invalid value: 2000001000: must be less than or equal to 1000000000"),
]


ACCEPTED = [
    Rule("workload-basic-template", workload, templates({"name": "a", "schedulingPolicy": {"basic": {}}}), "", ""),
    Rule("workload-empty-topology", workload, templates(template("a", schedulingConstraints={"topology": []})), "",
         ""),
    Rule("workload-controller-core-kind", workload, at("spec.controllerRef", {"kind": "Pod", "name": "p"}), "", ""),
    Rule("workload-template-class-not-checked", workload, templates(template("a", priorityClassName="absent")), "",
         ""),
    Rule("group-name-with-dots", pod_group, lambda obj: obj["metadata"].update(name="train.workers"), "", ""),
    Rule("group-basic", pod_group, at("spec.schedulingPolicy", {"basic": {}}), "", ""),
    Rule("group-four-claims", pod_group,
         at("spec.resourceClaims", [{"name": f"c{i}", "resourceClaimTemplateName": "t"} for i in range(4)]), "", ""),
]
"""What the API server accepts: drasched must accept it too."""


def refusal(store: ClusterStore, obj: Obj) -> ApiError:
    with pytest.raises(ApiError) as caught:
        store.create(obj)
    return caught.value


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_the_unmutated_object_is_accepted(store: ClusterStore, ns: str, rule: Rule) -> None:
    store.create(rule.base(ns, unique(rule.id)))


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_each_rule_is_refused_naming_the_field(store: ClusterStore, ns: str, rule: Rule) -> None:
    obj = rule.base(ns, unique(rule.id))
    rule.mutate(obj)
    err = refusal(store, obj)
    assert isinstance(err, Invalid), err
    assert any(f == rule.field and rule.fragment in m for f, m in causes(err)), causes(err)


@pytest.mark.parametrize("rule", ACCEPTED, ids=[r.id for r in ACCEPTED])
def test_what_the_api_server_accepts_is_accepted(store: ClusterStore, ns: str, rule: Rule) -> None:
    obj = rule.base(ns, unique(rule.id))
    rule.mutate(obj)
    store.create(obj)


@pytest.mark.e2e
@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_both_stores_word_the_refusal_alike(local_cluster: LocalCluster, rule: Rule) -> None:
    """Not a fragment: the memory store's whole message is the API server's, word for word."""
    said = {}
    for name, store in (("memory", MemoryStore()), ("kube", local_cluster.store())):
        ns = unique("words")
        ensure_namespace(store, ns)
        obj = rule.base(ns, "bad")
        rule.mutate(obj)
        said[name] = refusal(store, obj).message.replace(ns, "NS")
    assert said["memory"] == said["kube"]


@contextlib.contextmanager
def priority_class(store: ClusterStore, name: str, value: int, *, default: bool = False) -> Iterator[None]:
    pc: Obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
               "value": value, "globalDefault": default}
    with contextlib.suppress(AlreadyExists):
        store.create(pc)
    try:
        yield
    finally:
        with contextlib.suppress(NotFound):
            store.delete(kinds.PRIORITY_CLASS, name)


def create_admitted(store: ClusterStore, obj: Obj) -> Obj:
    """Create, retried while the server's Priority admission informer has not seen a new class."""
    for _ in range(100):
        try:
            return store.create(copy.deepcopy(obj))
        except Forbidden:
            time.sleep(0.05)
    return store.create(copy.deepcopy(obj))


def test_a_pod_group_gets_its_class_priority_and_the_default_disruption_mode(store: ClusterStore, ns: str) -> None:
    """plugin/pkg/admission/priority on PodGroups (1.37); ``disruptionMode`` defaults to single."""
    name = unique("gang-high")
    with priority_class(store, name, 1000):
        group = pod_group(ns, "train-workers")
        group["spec"]["priorityClassName"] = name
        got = create_admitted(store, group)
    assert got["spec"]["priority"] == 1000
    assert got["spec"]["disruptionMode"] == {"single": {}}


def test_a_pod_group_naming_no_class_gets_priority_zero(store: ClusterStore, ns: str) -> None:
    got = store.create(pod_group(ns, "plain"))
    assert got["spec"]["priority"] == 0 and "priorityClassName" not in got["spec"]


def test_a_pod_group_naming_a_missing_class_is_forbidden(store: ClusterStore, ns: str) -> None:
    group = pod_group(ns, "orphan")
    group["spec"]["priorityClassName"] = "no-such-class"
    err = refusal(store, group)
    assert isinstance(err, Forbidden)
    assert err.message == ('podgroups.scheduling.k8s.io "orphan" is forbidden: no PriorityClass with name '
                           "no-such-class was found")


def test_a_pod_group_priority_other_than_its_class_is_forbidden(store: ClusterStore, ns: str) -> None:
    group = pod_group(ns, "pinned")
    group["spec"]["priority"] = 7
    err = refusal(store, group)
    assert isinstance(err, Forbidden)
    assert err.message == ('podgroups.scheduling.k8s.io "pinned" is forbidden: priority set in the pod group (7) '
                           "must match the priority computed (0) based on the priority class set in the spec")


def test_the_global_default_class_names_a_pod_group_without_one() -> None:
    """On the memory store only: a global default on the shared test server would reach every
    other test's pods."""
    store = MemoryStore()
    ensure_namespace(store, "team")
    with priority_class(store, "everyone", 77, default=True):
        got = store.create(pod_group("team", "defaulted"))
    assert (got["spec"]["priorityClassName"], got["spec"]["priority"]) == ("everyone", 77)


# drasched simulate: the same input is refused with exit 2, naming file, document, object and field.


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_simulate_refuses_each_rule_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     rule: Rule) -> None:
    obj = rule.base("default", "bad")
    rule.mutate(obj)
    fine = workload("default", "fine")
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([fine, obj]), encoding="utf-8")
    assert main(["simulate", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: document 1: " in err and rule.field in err and rule.fragment in err, err
    assert f"{obj['kind']} " in err and "bad" in err, err


# Updates: what may change once the object exists (+k8s:immutable, +k8s:update on the v1beta1 types).


UPDATES = [
    Rule("workload-template-added", workload,
         lambda obj: obj["spec"]["podGroupTemplates"].append(template("more")),
         "spec.podGroupTemplates[1]", "Forbidden: item may not be added"),
    Rule("workload-template-removed", workload, templates(template("workers"), template("more")),
         "spec.podGroupTemplates", "Forbidden: item may not be removed"),
    Rule("workload-controller-changed", workload, at("spec.controllerRef.name", "other"),
         "spec.controllerRef", "Invalid value: null: field is immutable"),
    Rule("workload-template-gang-cleared", workload, at("spec.podGroupTemplates.0.schedulingPolicy", {"basic": {}}),
         "spec.podGroupTemplates[0].schedulingPolicy.gang", "Invalid value: null: field cannot be cleared once set"),
    Rule("workload-template-disruption-changed", workload,
         at("spec.podGroupTemplates.0.disruptionMode", {"all": {}}),
         "spec.podGroupTemplates[0].disruptionMode", "Invalid value: null: field is immutable"),
    Rule("group-workload-ref-changed", pod_group, at("spec.workloadRef.templateName", "other"),
         "spec.workloadRef", "Invalid value: null: field is immutable"),
    Rule("group-policy-to-basic", pod_group, at("spec.schedulingPolicy", {"basic": {}}),
         "spec.schedulingPolicy.basic", "Invalid value: null: field is immutable"),
    Rule("group-claims-changed", pod_group, at("spec.resourceClaims", [{"name": "gpu", "resourceClaimName": "x"}]),
         "spec.resourceClaims", "Invalid value: null: field is immutable"),
    Rule("group-priority-changed", pod_group, at("spec.priority", 5),
         "spec.priority", "Invalid value: null: field is immutable"),
]
"""Each rule's ``mutate`` is applied to the object as created (the removal rule's to a Workload
created with two templates, the first kept)."""

MUTABLE = [
    Rule("workload-min-count", workload, at("spec.podGroupTemplates.0.schedulingPolicy.gang.minCount", 8), "", ""),
    Rule("group-min-count", pod_group, at("spec.schedulingPolicy.gang.minCount", 8), "", ""),
    Rule("group-labels", pod_group, at("metadata.labels", {"team": "a"}), "", ""),
]


def _created(store: ClusterStore, ns: str, rule: Rule) -> Obj:
    obj = rule.base(ns, unique(rule.id))
    if rule.id == "workload-template-removed":
        obj["spec"]["podGroupTemplates"].append(template("more"))
        rule = Rule(rule.id, rule.base, templates(template("workers")), rule.field, rule.fragment)
    got = store.create(obj)
    rule.mutate(got)
    return got


@pytest.mark.parametrize("rule", UPDATES, ids=[r.id for r in UPDATES])
def test_each_update_rule_is_refused_naming_the_field(store: ClusterStore, ns: str, rule: Rule) -> None:
    changed = _created(store, ns, rule)
    with pytest.raises(Invalid) as caught:
        store.update(changed)
    assert (rule.field, rule.fragment) in causes(caught.value), causes(caught.value)


@pytest.mark.parametrize("rule", MUTABLE, ids=[r.id for r in MUTABLE])
def test_what_may_change_is_updated(store: ClusterStore, ns: str, rule: Rule) -> None:
    store.update(_created(store, ns, rule))


@pytest.mark.e2e
@pytest.mark.parametrize("rule", UPDATES, ids=[r.id for r in UPDATES])
def test_both_stores_word_the_update_refusal_alike(local_cluster: LocalCluster, rule: Rule) -> None:
    said = {}
    for name, store in (("memory", MemoryStore()), ("kube", local_cluster.store())):
        ns = unique("words")
        ensure_namespace(store, ns)
        changed = _created(store, ns, rule)
        with pytest.raises(Invalid) as caught:
            store.update(changed)
        said[name] = caught.value.message.replace(changed["metadata"]["name"], "NAME")
    assert said["memory"] == said["kube"]
