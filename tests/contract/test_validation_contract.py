"""Validation parity: every value rule drasched enforces, fed to the memory store and to a
real kube-apiserver alike, and to ``drasched simulate`` (exit 2, the field named).

One table of (valid object, one mutation, the field the API server names, a fragment of its
message). The rules come from kubernetes/kubernetes pkg/apis/resource/validation/validation.go,
pkg/apis/core/validation/validation.go, pkg/apis/scheduling/validation/validation.go,
plugin/pkg/admission/priority/admission.go and our CRDs' OpenAPI schemas (deploy/crds); the
kube backend checks that each expectation is the API server's own.
"""

from __future__ import annotations

import contextlib
import copy
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from drasched.api import kinds
from drasched.api.errors import ApiError, Forbidden, Invalid, NotFound
from drasched.cli import main
from drasched.store.base import ClusterStore, Obj
from drasched.store.memory import MemoryStore
from drasched.testing.apiserver import LocalCluster, ensure_namespace

DRIVER = "gpu.example.com"


# -- valid objects ----------------------------------------------------------------------------


def claim(ns: str, name: str) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": 1}}]}}}


def template(ns: str, name: str) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": ns}, "spec": {"spec": claim(ns, name)["spec"]}}


def device_class(ns: str, name: str) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def resource_slice(ns: str, name: str) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": DRIVER, "nodeName": "node-a",
                     "pool": {"name": "node-a", "generation": 0, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}},
                                  "capacity": {"memory": {"value": "40Gi"}}}]}}


def pod(ns: str, name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"schedulerName": "drasched",
                     "containers": [{"name": "main", "image": "registry.example/train:1"}]}}


def node(ns: str, name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]}}


def priority_class(ns: str, name: str) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": 10}


def deployment(ns: str, name: str) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "train"}},
                     "template": {"metadata": {"labels": {"app": "train"}}, "spec": pod(ns, name)["spec"]}}}


def job(ns: str, name: str) -> Obj:
    spec = {**pod(ns, name)["spec"], "restartPolicy": "Never"}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": {"template": {"spec": spec}}}


def stateful_set(ns: str, name: str) -> Obj:
    spec = {**deployment(ns, name)["spec"], "serviceName": "train"}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def daemon_set(ns: str, name: str) -> Obj:
    spec = {key: value for key, value in deployment(ns, name)["spec"].items() if key != "replicas"}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def disruption_budget(ns: str, name: str) -> Obj:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": ns},
            "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "train"}}}}


def failure_policy(*rules: Obj) -> Callable[[Obj], None]:
    """A Job with ``spec.podFailurePolicy`` holding ``rules``."""
    return at("spec.podFailurePolicy", {"rules": list(rules)})


EXIT_1 = {"operator": "In", "values": [1]}


def with_rules(count: int) -> Callable[[Obj], None]:
    return failure_policy(*[{"action": "Count", "onExitCodes": EXIT_1}] * count)


def pod_group(ns: str, name: str) -> Obj:
    return {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns}, "spec": {"minMember": 2}}


def queue(ns: str, name: str) -> Obj:
    return {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"parentQueue": "root"}}


# -- mutations --------------------------------------------------------------------------------


def at(path: str, value: Any) -> Callable[[Obj], None]:
    """Set the dotted ``path`` (list indexes as numbers) to ``value``."""
    keys: list[str | int] = [int(k) if k.isdigit() else k for k in path.split(".")]

    def mutate(obj: Obj) -> None:
        cur: Any = obj
        for k in keys[:-1]:
            cur = cur[k]
        cur[keys[-1]] = copy.deepcopy(value)

    return mutate


def request(obj: Obj) -> Obj:
    return obj["spec"]["devices"]["requests"][0]


def container(obj: Obj) -> Obj:
    return obj["spec"]["containers"][0]


def with_many_selectors(obj: Obj) -> None:
    request(obj)["exactly"]["selectors"] = [{"cel": {"expression": "true"}}] * 33


def with_many_constraints(obj: Obj) -> None:
    obj["spec"]["devices"]["constraints"] = [{"matchAttribute": f"{DRIVER}/model"}] * 33


def with_many_subrequests(obj: Obj) -> None:
    request(obj).pop("exactly")
    request(obj)["firstAvailable"] = [{"name": f"s{i}", "deviceClassName": DRIVER} for i in range(9)]


def with_many_tolerations(obj: Obj) -> None:
    request(obj)["exactly"]["tolerations"] = [{"key": f"k{i}", "operator": "Exists"} for i in range(17)]


def with_config_for(name: str) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        obj["spec"]["devices"]["config"] = [{"requests": [name], "opaque": {"driver": DRIVER, "parameters": {}}}]

    return mutate


def with_duplicate_request(obj: Obj) -> None:
    obj["spec"]["devices"]["requests"].append(copy.deepcopy(request(obj)))


def with_many_attributes(obj: Obj) -> None:
    obj["spec"]["devices"][0]["attributes"] = {f"a{i}": {"int": i} for i in range(32)}


def with_resources(**resources: dict[str, str]) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        container(obj)["resources"] = resources

    return mutate


def with_pod_level(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
                   container: dict[str, str] | None = None, container_limits: dict[str, str] | None = None,
                   claims: list[Obj] | None = None) -> Callable[[Obj], None]:
    """Pod-level ``spec.resources`` (and the first container's requests and limits)."""
    def mutate(obj: Obj) -> None:
        res: Obj = {k: v for k, v in (("requests", requests), ("limits", limits), ("claims", claims)) if v}
        obj["spec"]["resources"] = res
        if container or container_limits:
            container_of = {k: v for k, v in (("requests", container), ("limits", container_limits)) if v}
            obj["spec"]["containers"][0]["resources"] = container_of

    return mutate


def with_container_claim(obj: Obj) -> None:
    container(obj)["resources"] = {"claims": [{"name": "gpu"}]}


def with_duplicate_pod_claims(obj: Obj) -> None:
    obj["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "a"},
                                     {"name": "gpu", "resourceClaimName": "b"}]


def with_owner_without_uid(obj: Obj) -> None:
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "train"}]


def with_slice_node_selector(requirement: Obj) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        del obj["spec"]["nodeName"]
        obj["spec"]["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [requirement]}]}

    return mutate


def with_request_policy_max(high: str) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        dev = obj["spec"]["devices"][0]
        dev["allowMultipleAllocations"] = True
        dev["capacity"]["memory"]["requestPolicy"] = {"default": "1Gi", "validRange": {"min": "1Gi", "max": high}}

    return mutate


def with_shared_counter(name: str) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        del obj["spec"]["devices"]
        obj["spec"]["sharedCounters"] = [{"name": "set", "counters": {name: {"value": "1"}}}]

    return mutate


def per_device(placement: Obj) -> Callable[[Obj], None]:
    """The slice's node chosen per device, the first device placed by ``placement``."""
    def mutate(obj: Obj) -> None:
        del obj["spec"]["nodeName"]
        obj["spec"]["perDeviceNodeSelection"] = True
        obj["spec"]["devices"][0].update(placement)

    return mutate


def consuming_twice(obj: Obj) -> None:
    use = {"counterSet": "set", "counters": {"mem": {"value": "1Gi"}}}
    obj["spec"]["devices"][0]["consumesCounters"] = [use, use]


@dataclass(frozen=True)
class Rule:
    """One refusal: ``base`` made invalid by ``mutate``; the API server names ``field``."""

    id: str
    base: Callable[[str, str], Obj]
    mutate: Callable[[Obj], None]
    field: str
    fragment: str


T = "spec.devices.requests[0].exactly"
RULES = [
    # pkg/apis/resource/validation: numbers, list limits, enums, names, references.
    Rule("claim-count-negative", claim, at("spec.devices.requests.0.exactly.count", -1), f"{T}.count",
         "Invalid value: -1: must be greater than zero"),
    Rule("claim-33-selectors", claim, with_many_selectors, f"{T}.selectors",
         "Too many: 33: must have at most 32 items"),
    Rule("claim-33-constraints", claim, with_many_constraints, "spec.devices.constraints",
         "Too many: 33: must have at most 32 items"),
    Rule("claim-9-first-available", claim, with_many_subrequests, "spec.devices.requests[0].firstAvailable",
         "Too many: 9: must have at most 8 items"),
    Rule("claim-toleration-operator", claim,
         at("spec.devices.requests.0.exactly.tolerations", [{"key": "k", "operator": "Maybe"}]),
         f"{T}.tolerations[0].operator", 'Unsupported value: "Maybe"'),
    Rule("claim-toleration-effect", claim,
         at("spec.devices.requests.0.exactly.tolerations", [{"key": "k", "operator": "Exists", "effect": "Later"}]),
         f"{T}.tolerations[0].effect", 'Unsupported value: "Later"'),
    Rule("claim-allocation-mode", claim, at("spec.devices.requests.0.exactly.allocationMode", "Some"),
         f"{T}.allocationMode", 'Unsupported value: "Some"'),
    Rule("claim-request-name", claim, at("spec.devices.requests.0.name", "GPU"),
         "spec.devices.requests[0].name", "a lowercase RFC 1123 label must consist of"),
    Rule("claim-config-unknown-request", claim, with_config_for("nope"), "spec.devices.config[0].requests[0]",
         'Invalid value: "nope": must be the name of a request in the claim'),
    Rule("claim-match-attribute-unqualified", claim, at("spec.devices.constraints", [{"matchAttribute": "model"}]),
         "spec.devices.constraints[0].matchAttribute", "a fully qualified name must be a domain and a name"),
    # 1.37 validates the list declaratively (+k8s:unique=map): the whole item, defaulted, in Go's field order
    Rule("claim-duplicate-request", claim, with_duplicate_request, "spec.devices.requests[1]",
         'Duplicate value: {"name":"gpu","exactly":{"deviceClassName":"gpu.example.com","allocationMode":"ExactCount",'
         '"count":1}}'),
    Rule("template-count-negative", template, at("spec.spec.devices.requests.0.exactly.count", -1),
         "spec.spec.devices.requests[0].exactly.count", "Invalid value: -1: must be greater than zero"),
    Rule("template-metadata-label", template, at("spec.metadata", {"labels": {"team": "a b"}}),
         "spec.metadata.labels", "a valid label must be an empty string or consist of alphanumeric characters"),
    Rule("class-33-selectors", device_class, at("spec.selectors", [{"cel": {"expression": "true"}}] * 33),
         "spec.selectors", "Too many: 33: must have at most 32 items"),
    Rule("class-extended-resource-name", device_class, at("spec.extendedResourceName", "gpu"),
         "spec.extendedResourceName",
         "Invalid value: \"gpu\": a name must be a domain-prefixed path, such as 'example.com/my-prop'"),
    Rule("class-config-driver", device_class,
         at("spec.config", [{"opaque": {"driver": "Bad_Driver", "parameters": {}}}]), "spec.config[0].opaque.driver",
         "an RFC 1123 subdomain must consist of alphanumeric characters"),  # 1.37: k8s-long-name-caseless
    Rule("claim-constraint-unknown-request", claim,
         at("spec.devices.constraints", [{"requests": ["nope"], "matchAttribute": f"{DRIVER}/model"}]),
         "spec.devices.constraints[0].requests[0]",
         'Invalid value: "nope": must be the name of a request in the claim'),
    Rule("slice-device-name", resource_slice, at("spec.devices.0.name", "GPU_0"), "spec.devices[0].name",
         "a lowercase RFC 1123 label must consist of"),
    Rule("slice-driver-over-63", resource_slice, at("spec.driver", "d" * 60 + ".example.com"), "spec.driver",
         "Too long: may not be more than 63 bytes"),
    Rule("slice-pool-name", resource_slice, at("spec.pool.name", "Pool_A"), "spec.pool.name",
         "a lowercase RFC 1123 subdomain must consist of"),
    Rule("slice-pool-generation", resource_slice, at("spec.pool.generation", -1), "spec.pool.generation",
         "Invalid value: -1: must be greater than or equal to zero"),
    Rule("slice-node-name", resource_slice, at("spec.nodeName", "Node_A"), "spec.nodeName",
         "a lowercase RFC 1123 subdomain must consist of"),
    Rule("slice-33-attributes", resource_slice, with_many_attributes, "spec.devices[0]",
         "the total number of attributes and capacities must not exceed 32"),
    Rule("slice-attribute-name", resource_slice, at("spec.devices.0.attributes", {"gpu-model": {"string": "x"}}),
         "spec.devices[0].attributes", "a valid C identifier must start with alphabetic character"),
    Rule("slice-capacity-name", resource_slice, at("spec.devices.0.capacity", {"mem-ory": {"value": "1"}}),
         "spec.devices[0].capacity", "a valid C identifier must start with alphabetic character"),
    Rule("slice-node-selector-operator", resource_slice, with_slice_node_selector({"key": "zone", "operator": "Near"}),
         "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator",
         'Invalid value: "Near": not a valid selector operator'),
    Rule("slice-node-selector-value", resource_slice,
         with_slice_node_selector({"key": "zone", "operator": "In", "values": ["a b"]}),
         "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]",
         "a valid label must be an empty string or consist of alphanumeric characters"),
    Rule("slice-taint-key", resource_slice, at("spec.devices.0.taints", [{"key": "bad key", "effect": "NoSchedule"}]),
         "spec.devices[0].taints[0].key", "name part must consist of alphanumeric characters"),
    Rule("slice-taint-effect", resource_slice, at("spec.devices.0.taints", [{"key": "k", "effect": "Later"}]),
         "spec.devices[0].taints[0].effect", 'Unsupported value: "Later"'),
    Rule("slice-binding-conditions-alone", resource_slice,
         at("spec.devices.0.bindingConditions", [f"{DRIVER}/attached"]), "spec.devices[0].bindingFailureConditions",
         "Invalid value: null: bindingFailureConditions are required to use bindingConditions"),
    Rule("slice-request-policy-over-capacity", resource_slice, with_request_policy_max("80Gi"),
         "spec.devices[0].capacity[memory].requestPolicy.validRange.max",
         'Invalid value: "80Gi": max is larger than capacity value: 40Gi'),
    Rule("slice-counter-name", resource_slice, with_shared_counter("mem_0"), "spec.sharedCounters[0].counters",
         'Invalid value: "mem_0": a lowercase RFC 1123 label must consist of'),
    # pkg/registry/resource/utils.go AuthorizedForAdmin: the test namespaces carry no admin-access label.
    Rule("claim-admin-access-unlabelled-namespace", claim, at("spec.devices.requests.0.exactly.adminAccess", True),
         "spec.devices.requests[0].adminAccess", "Forbidden: admin access to devices requires the "
         "`resource.kubernetes.io/admin-access: true` label on the containing namespace"),
    Rule("template-admin-access-unlabelled-namespace", template,
         at("spec.spec.devices.requests.0.exactly.adminAccess", True), "spec.devices.requests[0].adminAccess",
         "Forbidden: admin access to devices requires the"),
    # pkg/apis/core/validation: names and keys, quantities, references.
    # ValidatePodCreate and ValidatePodTemplateSpec: ephemeral containers come through their subresource only.
    Rule("pod-ephemeral-containers-on-create", pod, at("spec.ephemeralContainers", [{"name": "debug", "image": "b"}]),
         "spec.ephemeralContainers", "Forbidden: cannot be set on create"),
    Rule("job-template-ephemeral-containers", job,
         at("spec.template.spec.ephemeralContainers", [{"name": "debug", "image": "b"}]),
         "spec.template.spec.ephemeralContainers", "Forbidden: ephemeral containers not allowed in pod template"),
    Rule("pod-node-name", pod, at("spec.nodeName", "Node_A"), "spec.nodeName",
         "a lowercase RFC 1123 subdomain must consist of"),
    Rule("pod-toleration-operator", pod, at("spec.tolerations", [{"key": "k", "operator": "Maybe"}]),
         "spec.tolerations[0].operator", 'Unsupported value: "Maybe"'),
    Rule("pod-toleration-effect", pod, at("spec.tolerations", [{"key": "k", "operator": "Exists", "effect": "Later"}]),
         "spec.tolerations[0].effect", 'Unsupported value: "Later"'),
    Rule("pod-node-affinity-key", pod, at("spec.affinity", {"nodeAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
             {"matchExpressions": [{"key": "bad key", "operator": "Exists"}]}]}}}),
         "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
         ".matchExpressions[0].key", "name part must consist of alphanumeric characters"),
    Rule("pod-node-affinity-weight", pod, at("spec.affinity", {"nodeAffinity": {
         "preferredDuringSchedulingIgnoredDuringExecution": [
             {"weight": 101, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}]}}),
         "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
         "Invalid value: 101: must be in the range 1-100"),
    Rule("pod-node-selector-value", pod, at("spec.nodeSelector", {"zone": "a b"}), "spec.nodeSelector",
         "a valid label must be an empty string or consist of alphanumeric characters"),
    Rule("pod-restart-policy", pod, at("spec.restartPolicy", "Sometimes"), "spec.restartPolicy",
         'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'),
    Rule("label-key", pod, at("metadata.labels", {"bad key": "x"}), "metadata.labels",
         "name part must consist of alphanumeric characters"),
    Rule("label-value", pod, at("metadata.labels", {"team": "a b"}), "metadata.labels",
         "a valid label must be an empty string or consist of alphanumeric characters"),
    Rule("annotation-key", pod, at("metadata.annotations", {"bad key": "x"}), "metadata.annotations",
         "name part must consist of alphanumeric characters"),
    Rule("owner-reference-without-uid", pod, with_owner_without_uid, "metadata.ownerReferences[0].uid",
         "Required value: must not be empty"),
    Rule("negative-request", pod, with_resources(requests={"cpu": "-1"}), "spec.containers[0].resources.requests[cpu]",
         'Invalid value: "-1": must be greater than or equal to 0'),
    Rule("request-above-limit", pod, with_resources(requests={"cpu": "2"}, limits={"cpu": "1"}),
         "spec.containers[0].resources.requests", 'Invalid value: "2": must be less than or equal to cpu limit of 1'),
    Rule("extended-request-not-limit", pod,
         with_resources(requests={"nvidia.com/gpu": "1"}, limits={"nvidia.com/gpu": "2"}),
         "spec.containers[0].resources.requests", "must be equal to nvidia.com/gpu limit of 2"),
    Rule("extended-request-without-limit", pod, with_resources(requests={"nvidia.com/gpu": "0"}),
         "spec.containers[0].resources.limits", "Limit must be set for non overcommitable resources"),
    Rule("extended-not-integer", pod, with_resources(limits={"nvidia.com/gpu": "0.5"}),
         "spec.containers[0].resources.limits[nvidia.com/gpu]", 'Invalid value: "500m": must be an integer'),
    # pkg/apis/core/validation validatePodResources / validatePodResourceConsistency (PodLevelResources)
    Rule("pod-level-below-containers", pod, with_pod_level(requests={"cpu": "500m"}, container={"cpu": "1"}),
         "spec.resources.requests[cpu]", 'Invalid value: "500m": must be greater than or equal to aggregate '
                                         "container requests of 1"),
    Rule("pod-level-unsupported-name", pod, with_pod_level(requests={"nvidia.com/gpu": "1"}),
         "spec.resources.requests[nvidia.com/gpu]", 'Unsupported value: "nvidia.com/gpu": supported values: '
                                                    '"cpu", "hugepages-", "memory"'),
    Rule("pod-level-request-above-limit", pod, with_pod_level(requests={"cpu": "2"}, limits={"cpu": "1"}),
         "spec.resources.requests", 'Invalid value: "2": must be less than or equal to cpu limit of 1'),
    Rule("pod-level-container-limit-above-pod", pod,
         with_pod_level(limits={"memory": "1Gi"}, container_limits={"memory": "2Gi"}),
         "spec.resources.containers[0][memory].limits", 'Invalid value: "2Gi": must be less than or equal to pod '
                                                       "limits of 1Gi"),
    Rule("pod-level-claims", pod, with_pod_level(requests={"cpu": "1"}, claims=[{"name": "gpu"}]),
         "spec.resources.claims", "Forbidden: claims may not be set for Resources at pod-level"),
    Rule("container-claim-not-in-pod", pod, with_container_claim, "spec.containers[0].resources.claims[0]",
         'Not found: "gpu": must be one of the names in pod.spec.resourceClaims'),
    Rule("pod-claim-name", pod, at("spec.resourceClaims", [{"name": "GPU", "resourceClaimName": "a"}]),
         "spec.resourceClaims[0].name", "a lowercase RFC 1123 label must consist of"),
    Rule("pod-claim-reference-name", pod,
         at("spec.resourceClaims", [{"name": "gpu", "resourceClaimName": "Bad_Claim"}]),
         "spec.resourceClaims[0].resourceClaimName", 'Invalid value: "Bad_Claim": a lowercase RFC 1123 subdomain'),
    Rule("pod-claim-without-source", pod, at("spec.resourceClaims", [{"name": "gpu"}]), "spec.resourceClaims[0]",
         'Invalid value: {"Name":"gpu","ResourceClaimName":null,"ResourceClaimTemplateName":null}: must specify '
         "one of: `resourceClaimName`, `resourceClaimTemplateName`"),
    Rule("claim-name", claim, at("metadata.name", "Claim_A"), "metadata.name",
         "a lowercase RFC 1123 subdomain must consist of"),
    Rule("duplicate-pod-claims", pod, with_duplicate_pod_claims, "spec.resourceClaims[1].name",
         'Duplicate value: "gpu"'),
    # upstream's validateNodeTaints is handed a path rooted at metadata
    Rule("node-taint-effect", node, at("spec.taints.0.effect", "Later"), "metadata.taints[0].effect",
         'Unsupported value: "Later": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'),
    Rule("node-taint-key", node, at("spec.taints.0.key", "bad key"), "metadata.taints[0].key",
         "name part must consist of alphanumeric characters"),
    Rule("pod-toleration-exists-with-value", pod,
         at("spec.tolerations", [{"key": "k", "operator": "Exists", "value": "v"}]), "spec.tolerations[0].operator",
         "value must be empty when `operator` is 'Exists'"),
    # pkg/apis/apps and batch validation: a workload's pod template is validated as a pod spec.
    Rule("deployment-template-container-name", deployment, at("spec.template.spec.containers.0.name", "Web_1"),
         "spec.template.spec.containers[0].name", 'Invalid value: "Web_1": a lowercase RFC 1123 label'),
    Rule("job-template-priority-class-name", job, at("spec.template.spec.priorityClassName", "Bad_Class"),
         "spec.template.spec.priorityClassName", 'Invalid value: "Bad_Class": a lowercase RFC 1123 subdomain'),
    Rule("job-template-extended-request-without-limit", job,
         at("spec.template.spec.containers.0.resources", {"requests": {"nvidia.com/gpu": "1"}}),
         "spec.template.spec.containers[0].resources.limits", "Limit must be set for non overcommitable resources"),
    Rule("deployment-negative-replicas", deployment, at("spec.replicas", -1), "spec.replicas",
         "Invalid value: -1: must be greater than or equal to 0"),
    Rule("deployment-selector-not-template", deployment, at("spec.selector", {"matchLabels": {"app": "other"}}),
         "spec.template.metadata.labels", "`selector` does not match template `labels`"),
    # pkg/apis/apps/validation ValidateRollingUpdateDeployment / ValidateRollingUpdateDaemonSet
    Rule("deployment-surge-not-percent", deployment, at("spec.strategy", {"rollingUpdate": {"maxSurge": "x"}}),
         "spec.strategy.rollingUpdate.maxSurge", "a valid percent string must be a numeric string"),
    Rule("deployment-unavailable-over-100", deployment,
         at("spec.strategy", {"rollingUpdate": {"maxUnavailable": "101%"}}),
         "spec.strategy.rollingUpdate.maxUnavailable", 'Invalid value: "101%": must not be greater than 100%'),
    Rule("deployment-surge-and-unavailable-zero", deployment,
         at("spec.strategy", {"rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}}),
         "spec.strategy.rollingUpdate.maxUnavailable", "Invalid value: 0: may not be 0 when `maxSurge` is 0"),
    Rule("daemonset-negative-unavailable", daemon_set,
         at("spec.updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": -1}}),
         "spec.updateStrategy.rollingUpdate.maxUnavailable", "Invalid value: -1: must be greater than or equal to 0"),
    Rule("daemonset-surge-and-unavailable", daemon_set,
         at("spec.updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}),
         "spec.updateStrategy.rollingUpdate.maxSurge", "may not be set when maxUnavailable is non-zero"),
    Rule("daemonset-surge-and-unavailable-zero", daemon_set,
         at("spec.updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}}),
         "spec.updateStrategy.rollingUpdate.maxUnavailable", "cannot be 0 when maxSurge is 0"),
    # pkg/apis/policy/validation ValidatePodDisruptionBudgetSpec
    Rule("pdb-min-available-not-percent", disruption_budget, at("spec.minAvailable", "half"), "spec.minAvailable",
         'Invalid value: "half": a valid percent string must be a numeric string followed by an ending'),
    Rule("pdb-negative-max-unavailable", disruption_budget,
         lambda obj: obj["spec"].update(minAvailable=None, maxUnavailable=-2), "spec.maxUnavailable",
         "Invalid value: -2: must be greater than or equal to 0"),
    Rule("pdb-min-available-over-100", disruption_budget, at("spec.minAvailable", "150%"), "spec.minAvailable",
         "must not be greater than 100%"),
    Rule("pdb-both-counts", disruption_budget, at("spec.maxUnavailable", 1), "spec",
         "minAvailable and maxUnavailable cannot be both set"),
    Rule("pdb-unknown-eviction-policy", disruption_budget, at("spec.unhealthyPodEvictionPolicy", "Never"),
         "spec.unhealthyPodEvictionPolicy", 'Unsupported value: "Never"'),
    Rule("job-negative-completions", job, at("spec.completions", -1), "spec.completions",
         "Invalid value: -1: must be greater than or equal to 0"),
    Rule("job-completion-mode", job, at("spec.completionMode", "Sometimes"), "spec.completionMode",
         'Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"'),
    Rule("job-restart-policy-always", job, at("spec.template.spec.restartPolicy", "Always"),
         "spec.template.spec.restartPolicy", 'Required value: valid values: "OnFailure", "Never"'),
    # pkg/apis/batch/validation validatePodFailurePolicy, validatePodReplacementPolicy (v1.36.3).
    Rule("job-failure-policy-action-missing", job, failure_policy({"onExitCodes": EXIT_1}),
         "spec.podFailurePolicy.rules[0].action",
         'Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]'),
    Rule("job-failure-policy-action-unsupported", job, failure_policy({"action": "Retry", "onExitCodes": EXIT_1}),
         "spec.podFailurePolicy.rules[0].action",
         'Unsupported value: "Retry": supported values: "Count", "FailIndex", "FailJob", "Ignore"'),
    Rule("job-fail-index-needs-backoff-per-index", job,
         failure_policy({"action": "FailIndex", "onExitCodes": EXIT_1}), "spec.podFailurePolicy.rules[0].action",
         'Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set'),
    Rule("job-failure-policy-21-rules", job, with_rules(21), "spec.podFailurePolicy.rules",
         "Too many: 21: must have at most 20 items"),
    Rule("job-failure-policy-no-requirement", job, failure_policy({"action": "Ignore"}),
         "spec.podFailurePolicy.rules[0]",
         "Invalid value: specifying one of OnExitCodes and OnPodConditions is required"),
    Rule("job-failure-policy-both-requirements", job, failure_policy(
         {"action": "Ignore", "onExitCodes": EXIT_1,
          "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}),
         "spec.podFailurePolicy.rules[0]",
         "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported"),
    Rule("job-failure-policy-exit-code-operator", job,
         failure_policy({"action": "Count", "onExitCodes": {"operator": "Within", "values": [1]}}),
         "spec.podFailurePolicy.rules[0].onExitCodes.operator",
         'Unsupported value: "Within": supported values: "In", "NotIn"'),
    Rule("job-failure-policy-exit-code-zero-in", job,
         failure_policy({"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0, 1]}}),
         "spec.podFailurePolicy.rules[0].onExitCodes.values[0]", "Invalid value: 0: must not be 0 for the In operator"),
    Rule("job-failure-policy-exit-codes-unordered", job,
         failure_policy({"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [3, 1]}}),
         "spec.podFailurePolicy.rules[0].onExitCodes.values", "Invalid value: [3,1]: must be ordered"),
    Rule("job-failure-policy-exit-codes-duplicate", job,
         failure_policy({"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1, 1]}}),
         "spec.podFailurePolicy.rules[0].onExitCodes.values[1]", "Duplicate value: 1"),
    Rule("job-failure-policy-exit-codes-empty", job,
         failure_policy({"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": []}}),
         "spec.podFailurePolicy.rules[0].onExitCodes.values", "Invalid value: []: at least one value is required"),
    Rule("job-failure-policy-256-exit-codes", job,
         failure_policy({"action": "FailJob", "onExitCodes": {"operator": "In", "values": list(range(1, 257))}}),
         "spec.podFailurePolicy.rules[0].onExitCodes.values", "Too many: 256: must have at most 255 items"),
    Rule("job-failure-policy-unknown-container", job,
         failure_policy({"action": "FailJob", "onExitCodes": {"containerName": "sidecar", **EXIT_1}}),
         "spec.podFailurePolicy.rules[0].onExitCodes.containerName",
         'Invalid value: "sidecar": must be one of the container or initContainer names in the pod template'),
    Rule("job-failure-policy-condition-status", job,
         failure_policy({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "Maybe"}]}),
         "spec.podFailurePolicy.rules[0].onPodConditions[0].status",
         'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'),
    Rule("job-failure-policy-condition-type", job,
         failure_policy({"action": "Ignore", "onPodConditions": [{"type": "not a type", "status": "True"}]}),
         "spec.podFailurePolicy.rules[0].onPodConditions[0].type", "name part must consist of alphanumeric characters"),
    Rule("job-failure-policy-21-conditions", job, failure_policy({"action": "Ignore", "onPodConditions": [
         {"type": f"Condition{i}", "status": "True"} for i in range(21)]}),
         "spec.podFailurePolicy.rules[0].onPodConditions", "Too many: 21: must have at most 20 items"),
    Rule("job-failure-policy-needs-restart-never", job, lambda obj: (
         with_rules(1)(obj), at("spec.template.spec.restartPolicy", "OnFailure")(obj)),
         "spec.template.spec.restartPolicy",
         'Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified'),
    Rule("job-replacement-policy-with-failure-policy", job, lambda obj: (
         with_rules(1)(obj), at("spec.podReplacementPolicy", "TerminatingOrFailed")(obj)),
         "spec.podReplacementPolicy", 'Unsupported value: "TerminatingOrFailed": supported values: "Failed"'),
    Rule("job-replacement-policy", job, at("spec.podReplacementPolicy", "Sometimes"), "spec.podReplacementPolicy",
         'Unsupported value: "Sometimes": supported values: "Failed", "TerminatingOrFailed"'),
    # pkg/apis/apps/validation ValidateStatefulSetSpec: serviceName, when set, is IsDNS1123Label's.
    Rule("statefulset-service-name", stateful_set, at("spec.serviceName", "Train_Svc"), "spec.serviceName",
         'Invalid value: "Train_Svc": a lowercase RFC 1123 label must consist of'),
    Rule("statefulset-service-name-dots", stateful_set, at("spec.serviceName", "train.svc"), "spec.serviceName",
         'Invalid value: "train.svc": must not contain dots'),
    Rule("statefulset-service-name-over-63", stateful_set, at("spec.serviceName", "s" * 64), "spec.serviceName",
         "must be no more than 63 characters"),
    # the registry labels a Job's pod template with job-name=<name> before validation
    Rule("job-name-over-63", job, at("metadata.name", "j" * 64), "spec.template.labels",
         f'Invalid value: "{"j" * 64}": must be no more than 63 bytes'),
    # ValidateObjectMeta's finalizers: qualified names; a built-in kind's needs a domain unless standard
    Rule("finalizer-without-domain", claim, at("metadata.finalizers", ["gpu.example.com"]), "metadata.finalizers[0]",
         'Invalid value: "gpu.example.com": name is neither a standard finalizer name nor is it fully qualified'),
    Rule("finalizer-name-over-63", pod, at("metadata.finalizers", [f"example.com/{'x' * 64}"]), "metadata.finalizers",
         "name part must be no more than 63 bytes"),
    Rule("finalizer-orphan-and-foreground", pod, at("metadata.finalizers", ["orphan", "foregroundDeletion"]),
         "metadata.finalizers", "finalizer orphan and foregroundDeletion cannot be both set"),
    # the workload-aware scheduling API (1.36 GenericWorkload): a pod's group is named
    Rule("pod-scheduling-group-without-name", pod, at("spec.schedulingGroup", {}),
         "spec.schedulingGroup.podGroupName", "Invalid value: null: must specify one of: `podGroupName`"),
    Rule("pod-scheduling-group-name", pod, at("spec.schedulingGroup", {"podGroupName": "Bad_Group"}),
         "spec.schedulingGroup.podGroupName", 'Invalid value: "Bad_Group": a lowercase RFC 1123 subdomain'),
    # validateDevice under perDeviceNodeSelection: exactly one of nodeName, nodeSelector, allNodes: true
    Rule("slice-device-all-nodes-false", resource_slice, per_device({"allNodes": False}),
         "spec.devices[0].allNodes", "Invalid value: false: must be either unset or set to true"),
    Rule("slice-device-node-name-empty", resource_slice, per_device({"nodeName": ""}), "spec.devices[0].nodeName",
         'Invalid value: "": must not be empty'),
    Rule("slice-device-two-placements", resource_slice, per_device({"nodeName": "node-a", "allNodes": True}),
         "spec.devices[0]", 'Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, '
         "or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"),
    Rule("slice-device-no-placement", resource_slice, per_device({}), "spec.devices[0]",
         "Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required"),
    Rule("slice-duplicate-counter-consumption", resource_slice, consuming_twice, "spec.devices[0].consumesCounters[1]",
         'Duplicate value: {"counterSet":"set","counters":{"mem":{"value":"1Gi"}}}'),  # 1.37: +k8s:unique=map
    # a capacity without a value is Go's zero Quantity; a JSON number is a quantity too
    Rule("slice-request-policy-without-value", resource_slice, lambda obj: (
         with_request_policy_max("8Gi")(obj), obj["spec"]["devices"][0]["capacity"]["memory"].pop("value")),
         "spec.devices[0].capacity[memory].requestPolicy.validRange.min",
         'Invalid value: "1Gi": min is larger than capacity value: 0'),
    Rule("slice-request-policy-number-max", resource_slice, lambda obj: (
         with_request_policy_max("8Gi")(obj),
         obj["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"]["validRange"].update(max=0.5)),
         "spec.devices[0].capacity[memory].requestPolicy.validRange.max",
         'Invalid value: "1Gi": min is larger than max: 500m'),
    # an absent spec is Go's zero spec, validated all the same
    Rule("job-without-spec", job, at("spec", None), "spec.template.spec.containers", "Required value"),
    Rule("deployment-without-spec", deployment, at("spec", None), "spec.selector", "Required value"),
    Rule("pod-without-spec", pod, at("spec", None), "spec.containers", "Required value"),
    # ValidateVolumeMounts: a mount names its volume and its path, each path once.
    Rule("pod-volume-mount-without-path", pod, lambda obj: (
         obj["spec"].update(volumes=[{"name": "data", "emptyDir": {}}]),
         obj["spec"]["containers"][0].update(volumeMounts=[{"name": "data"}])),
         "spec.containers[0].volumeMounts[0].mountPath", "Required value"),
    Rule("pod-volume-mount-path-twice", pod, lambda obj: (
         obj["spec"].update(volumes=[{"name": "data", "emptyDir": {}}]),
         obj["spec"]["containers"][0].update(volumeMounts=[{"name": "data", "mountPath": "/d"},
                                                           {"name": "data", "mountPath": "/d"}])),
         "spec.containers[0].volumeMounts[1].mountPath", 'Invalid value: "/d": must be unique'),
    # ValidateNode: a node's capacity and allocatable (kept on create) pass ValidateResourceQuantityValue.
    Rule("node-negative-allocatable", node, at("status", {"allocatable": {"pods": "-1"}}), "status.allocatable.pods",
         'Invalid value: "-1": must be greater than or equal to 0'),
    Rule("node-fractional-extended-capacity", node, at("status", {"capacity": {"nvidia.com/gpu": "0.5"}}),
         "status.capacity.nvidia.com/gpu", 'Invalid value: "500m": must be an integer'),
    Rule("slice-duplicate-counter-set", resource_slice, lambda obj: (
         with_shared_counter("mem")(obj), obj["spec"]["sharedCounters"].append(obj["spec"]["sharedCounters"][0])),
         "spec.sharedCounters[1]", 'Duplicate value: {"name":"set","counters":{"mem":{"value":"1"}}}'),
    # pkg/apis/scheduling/validation.
    Rule("priority-over-1e9", priority_class, at("value", 1_000_000_001), "value",
         "Forbidden: maximum allowed value of a user defined priority is 1000000000"),
    Rule("priority-preemption-policy", priority_class, at("preemptionPolicy", "Sometimes"), "preemptionPolicy",
         'Unsupported value: "Sometimes"'),
    # deploy/crds OpenAPI schema.
    Rule("pod-group-min-member-zero", pod_group, at("spec.minMember", 0), "spec.minMember",
         "Invalid value: 0: spec.minMember in body should be greater than or equal to 1"),
    Rule("pod-group-integer-queue", pod_group, at("spec.queue", 5), "spec.queue",
         'Invalid value: "integer": spec.queue in body must be of type string: "integer"'),
    Rule("queue-integer-parent", queue, at("spec.parentQueue", 5), "spec.parentQueue",
         'Invalid value: "integer": spec.parentQueue in body must be of type string: "integer"'),
]


ACCEPTED = [
    # count is omitempty: 0 is "unset" on the wire and defaults to 1 (SetDefaults_ExactDeviceRequest)
    Rule("claim-count-zero", claim, at("spec.devices.requests.0.exactly.count", 0), f"{T}.count", ""),
    # v1.36.3 and v1.37.2 enforce no limit on a request's tolerations (the v1 type's maxItems=16 is declarative only)
    Rule("claim-17-tolerations", claim, with_many_tolerations, f"{T}.tolerations", ""),
    # a claim or template without a spec requests nothing, which upstream allows
    Rule("claim-without-spec", claim, at("spec", None), "spec", ""),
    Rule("template-without-spec", template, at("spec", None), "spec", ""),
    # serviceName is optional in 1.36, and a DNS label may start with a digit
    Rule("statefulset-without-service-name", stateful_set, at("spec.serviceName", ""), "spec.serviceName", ""),
    Rule("statefulset-service-name-leading-digit", stateful_set, at("spec.serviceName", "1train"), "spec.serviceName",
         ""),
    # ValidateCSIDriverName checks strings.ToLower(name): a driver name may have capitals
    Rule("slice-driver-capitals", resource_slice, at("spec.driver", "GPU.Example.com"), "spec.driver", ""),
    Rule("class-config-driver-capitals", device_class,
         at("spec.config", [{"opaque": {"driver": "GPU.Example.com", "parameters": {}}}]), "spec.config", ""),
    # MilliValue() % 1000 in int64: 2^63 GPUs wrap to a multiple of 1000 and pass as an integer
    Rule("extended-limit-beyond-int64", pod, with_resources(limits={"nvidia.com/gpu": "9223372036854775808"}),
         "spec.containers[0].resources.limits", ""),
    Rule("finalizers-standard-and-qualified", pod, at("metadata.finalizers", ["kubernetes", "example.com/x"]),
         "metadata.finalizers", ""),
    Rule("node-fractional-hugepages", node, at("status", {"capacity": {"hugepages-2Mi": "1.5"}}), "status", ""),
    # a DaemonSet may surge instead of taking pods down; a budget may be 0 or 100%
    Rule("daemonset-surge-only", daemon_set,
         at("spec.updateStrategy",
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "10%"}}),
         "spec.updateStrategy", ""),
    Rule("pdb-max-unavailable-zero", disruption_budget,
         lambda obj: obj["spec"].update(minAvailable=None, maxUnavailable=0), "spec.maxUnavailable", ""),
    Rule("pdb-min-available-100-percent", disruption_budget, at("spec.minAvailable", "100%"), "spec.minAvailable", ""),
    Rule("job-failure-policy-valid", job, failure_policy(
         {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [1, 42]}},
         {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}), "spec.podFailurePolicy", ""),
]
"""Mutations that look wrong but the API server accepts: drasched must accept them too."""


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@contextlib.contextmanager
def cleanup(store: ClusterStore, obj: Obj) -> Iterator[None]:
    """Cluster-scoped objects outlive the test's namespace: delete what the test created."""
    try:
        yield
    finally:
        rt = kinds.for_object(obj)
        if not rt.namespaced:
            with contextlib.suppress(NotFound):
                store.delete(rt, obj["metadata"]["name"])


def refusal(store: ClusterStore, obj: Obj) -> ApiError:
    with cleanup(store, obj), pytest.raises(ApiError) as caught:
        store.create(obj)
    return caught.value


def causes(err: ApiError) -> list[tuple[str, str]]:
    return [(c.field, c.message) for c in err.causes]


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_the_unmutated_object_is_accepted(store: ClusterStore, ns: str, rule: Rule) -> None:
    obj = rule.base(ns, unique(rule.id))
    with cleanup(store, obj):
        store.create(obj)


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
    with cleanup(store, obj):
        store.create(obj)


@pytest.mark.e2e
@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_both_stores_word_the_refusal_alike(local_cluster: LocalCluster, rule: Rule) -> None:
    """Not a fragment: the memory store's message for the rule's field is the API server's, word for word."""
    said = {}
    for name, store in (("memory", MemoryStore()), ("kube", local_cluster.store())):
        ns = unique("words")
        ensure_namespace(store, ns)
        obj = rule.base(ns, unique(rule.id))
        rule.mutate(obj)
        said[name] = sorted(m for f, m in causes(refusal(store, obj)) if f == rule.field)
    assert said["memory"] == said["kube"]


def test_a_system_prefixed_priority_class_is_reserved(store: ClusterStore) -> None:
    err = refusal(store, priority_class("", unique("system-mine")))
    assert isinstance(err, Invalid)
    assert any(f == "metadata.name" and "reserved for system use only" in m for f, m in causes(err)), causes(err)


def test_pool_generation_and_reserved_for_limits_hold_on_status_writes(store: ClusterStore, ns: str) -> None:
    created = store.create(claim(ns, "c"))
    allocation = {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "node-a", "device": "gpu-0"}]}}
    consumers = [{"resource": "pods", "name": f"p{i}", "uid": str(uuid.uuid4())} for i in range(300)]
    with pytest.raises(Invalid) as caught:
        store.update_status({**created, "status": {"allocation": allocation, "reservedFor": consumers}})
    assert ("status.reservedFor", "Too many: 300: must have at most 256 items") in causes(caught.value)


@pytest.mark.parametrize(("result", "field", "fragment"), [
    ({"request": "nope"}, "status.allocation.devices.results[0].request",
     'Invalid value: "nope": must be the name of a request in the claim'),
    ({"driver": "Bad_Driver"}, "status.allocation.devices.results[0].driver",
     "an RFC 1123 subdomain must consist of alphanumeric characters"),
    ({"pool": "Pool_A"}, "status.allocation.devices.results[0].pool", "a lowercase RFC 1123 subdomain must consist of"),
    ({"device": "GPU_0"}, "status.allocation.devices.results[0].device", "a lowercase RFC 1123 label must consist of"),
], ids=["request", "driver", "pool", "device"])
def test_an_allocation_result_names_a_request_and_a_well_formed_device(
        store: ClusterStore, ns: str, result: Obj, field: str, fragment: str) -> None:
    created = store.create(claim(ns, "c"))
    allocation = {"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "node-a", "device": "gpu-0", **result}]}}
    with pytest.raises(Invalid) as caught:
        store.update_status({**created, "status": {"allocation": allocation}})
    assert any(f == field and fragment in m for f, m in causes(caught.value)), causes(caught.value)


# plugin/pkg/admission/priority/admission.go: admission answers 403, not 422.


def test_a_pod_priority_without_a_class_is_forbidden(store: ClusterStore, ns: str) -> None:
    obj = pod(ns, "p")
    obj["spec"]["priority"] = 100
    with pytest.raises(Forbidden) as caught:
        store.create(obj)
    assert "the integer value of priority (100) must not be provided in pod spec; priority admission " \
           "controller computed 0 from the given PriorityClass name" in str(caught.value)


def test_admission_names_a_generated_pod_by_its_prefix(store: ClusterStore, ns: str) -> None:
    """Admission runs before the name is generated: the refusal names the generateName prefix."""
    obj = pod(ns, "")
    obj["metadata"] = {"generateName": "worker-", "namespace": ns}
    obj["spec"]["priorityClassName"] = "missing"
    with pytest.raises(Forbidden) as caught:
        store.create(obj)
    assert str(caught.value) == 'pods "worker-" is forbidden: no PriorityClass with name missing was found'


def test_a_pod_preemption_policy_other_than_its_class_is_forbidden(store: ClusterStore, ns: str) -> None:
    obj = pod(ns, "p")
    obj["spec"]["preemptionPolicy"] = "Never"
    with pytest.raises(Forbidden) as caught:
        store.create(obj)
    assert "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission " \
           "controller computed PreemptLowerPriority from the given PriorityClass name" in str(caught.value)


def test_a_second_global_default_priority_class_is_forbidden(store: ClusterStore) -> None:
    first = {**priority_class("", unique("default-a")), "globalDefault": True}
    second = {**priority_class("", unique("default-b")), "globalDefault": True}
    with cleanup(store, first):
        store.create(first)
        for _ in range(50):  # the admission plugin reads classes from an informer: wait until it sees the first
            try:
                with cleanup(store, second):
                    store.create(second)
            except Forbidden as exc:
                assert f"PriorityClass {first['metadata']['name']} is already marked as default. " \
                       "Only one default can exist" in str(exc)
                return
            store.get(kinds.PRIORITY_CLASS, first["metadata"]["name"])
        pytest.fail("a second globalDefault PriorityClass was accepted")


# drasched simulate: the same input is refused with exit 2, naming file, document, object and field.


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_simulate_refuses_each_rule_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     rule: Rule) -> None:
    obj = rule.base("default", "bad")
    rule.mutate(obj)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([pod("default", "fine"), obj]), encoding="utf-8")
    assert main(["simulate", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: document 1: " in err and rule.field in err and rule.fragment in err, err
    assert f"{obj['kind']} " in err and obj["metadata"]["name"] in err, err


def test_simulate_refuses_a_pod_priority_without_a_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prioritized = pod("default", "p")
    prioritized["spec"]["priority"] = 100
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([pod("default", "fine"), prioritized]), encoding="utf-8")
    assert main(["simulate", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: document 1: Pod default/p: " in err and "must not be provided in pod spec" in err, err


def test_simulate_refuses_a_second_global_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    defaults = [{**priority_class("", name), "globalDefault": True} for name in ("a", "b")]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(defaults), encoding="utf-8")
    assert main(["simulate", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: document 1: PriorityClass b: " in err and "Only one default can exist" in err, err


def test_simulate_refuses_a_restored_status_the_api_server_refuses(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    restored = claim("default", "c")
    restored["status"] = {
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "node-a",
                                                "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": f"p{i}", "uid": str(uuid.uuid4())} for i in range(300)],
    }
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([restored]), encoding="utf-8")
    assert main(["simulate", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: document 0: ResourceClaim default/c: " in err, err
    assert "status.reservedFor: Too many: 300: must have at most 256 items" in err, err


def test_simulate_takes_an_empty_namespace_as_unset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``namespace: ""`` is unset: the API server takes the request's namespace (kubectl's current one)."""
    obj = template("", "one-gpu")
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([obj]), encoding="utf-8")
    assert main(["simulate", str(path), "-q", "-o", str(tmp_path / "out.yaml")]) == 0, capsys.readouterr().err
    written = yaml.safe_load_all((tmp_path / "out.yaml").read_text(encoding="utf-8"))
    (out,) = [o for o in written if o["kind"] == "ResourceClaimTemplate"]
    assert out["metadata"]["namespace"] == "default"
