"""The Helm chart as `helm lint` and `helm template` see it: what a platform team installs."""

from __future__ import annotations

import yaml

from drasched.scheduler.config import config_from_yaml
from tests.deploy.helm import CHART, KUBE_VERSION, by_kind, helm, render


def test_helm_lint_is_clean() -> None:
    done = helm("lint", "--strict", "--kube-version", KUBE_VERSION, str(CHART))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 chart(s) failed" in done.stdout


def test_defaults_render_a_highly_available_least_privilege_install() -> None:
    objs = render()
    kinds = sorted(o["kind"] for o in objs)
    assert kinds == ["ClusterRole", "ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding",
                     "ClusterRoleBinding", "ConfigMap", "Deployment", "PodDisruptionBudget", "Role", "RoleBinding",
                     "Service", "ServiceAccount"]
    (dep,) = by_kind(objs, "Deployment")
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["args"][:1] == ["serve"]
    assert "--leader-elect" in c["args"] and "--lease-namespace=drasched-system" in c["args"]
    assert "--enable-claim-controller" not in c["args"]  # kube-controller-manager runs it by default
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["resources"]["requests"] == {"cpu": "500m", "memory": "512Mi"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert c["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]}}
    assert pod["serviceAccountName"] == "drasched"
    roles = {r["metadata"]["name"] for r in by_kind(objs, "ClusterRole")}
    assert roles == {"drasched-scheduler", "drasched-binder", "drasched-implicit-gangs"}
    (pdb,) = by_kind(objs, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1


def test_configuration_is_a_config_map_drasched_accepts() -> None:
    objs = render("config.nodeOrder=spread")
    (cm,) = by_kind(objs, "ConfigMap")
    text = cm["data"]["config.yaml"]
    assert yaml.safe_load(text)["nodeOrder"] == "spread"
    assert config_from_yaml(text).node_order == "spread"


def test_no_role_grants_wildcards_or_secrets() -> None:
    """Least privilege: every rule names its resources and verbs; nothing reads Secrets."""
    objs = render("claimController.enabled=true")
    for role in by_kind(objs, "ClusterRole") + by_kind(objs, "Role"):
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] and "*" not in rule["resources"], role["metadata"]["name"]
            assert "secrets" not in rule["resources"]
    leases = [r for r in by_kind(objs, "Role")[0]["rules"] if "get" in r["verbs"]]
    assert leases[0]["resourceNames"] == ["drasched"]


def test_claim_controller_switch_adds_its_role_and_flag() -> None:
    objs = render("claimController.enabled=true")
    names = {r["metadata"]["name"] for r in by_kind(objs, "ClusterRole")}
    assert "drasched-claim-controller" in names
    bindings = {b["roleRef"]["name"] for b in by_kind(objs, "ClusterRoleBinding")}
    assert bindings == names
    (dep,) = by_kind(objs, "Deployment")
    assert "--enable-claim-controller" in dep["spec"]["template"]["spec"]["containers"][0]["args"]


def test_options_switch_objects_on_and_off() -> None:
    single = render("replicas=1", "leaderElection.enabled=false")
    assert not by_kind(single, "PodDisruptionBudget") and not by_kind(single, "Role")
    (dep,) = by_kind(single, "Deployment")
    assert "--no-leader-elect" in dep["spec"]["template"]["spec"]["containers"][0]["args"]
    monitored = render("metrics.serviceMonitor.enabled=true")
    (sm,) = by_kind(monitored, "ServiceMonitor")
    assert sm["spec"]["endpoints"][0]["path"] == "/metrics"


def test_chart_ships_the_crds_drasched_serves() -> None:
    crds = by_kind(render(include_crds=True), "CustomResourceDefinition")
    assert sorted(c["metadata"]["name"] for c in crds) == [
        "bindrequests.scheduling.drasched.io", "podgroups.scheduling.drasched.io", "queues.scheduling.drasched.io"]


def _granted(objs: list[dict]) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for role in by_kind(objs, "ClusterRole") for rule in role["rules"]
            for group in rule["apiGroups"] for resource in rule["resources"] for verb in rule["verbs"]}


def test_the_roles_let_serve_read_every_kind_it_watches() -> None:
    """A kind serve watches but may not list is as good as absent: with the rules of 1.37's
    DeviceTaintRules missing, serve handed out devices an admin had tainted."""
    from drasched.api import kinds
    from drasched.serve.main import FOREIGN_CHOICES, SERVE_KINDS

    for values in ((), ("claimController.enabled=true",)):
        granted = _granted(render(*values))
        watched = [*SERVE_KINDS, kinds.DEVICE_TAINT_RULE, *(rt for choices in FOREIGN_CHOICES for rt in choices)]
        for rt in watched:
            for verb in ("list", "watch"):
                assert (rt.group, rt.plural, verb) in granted, (values, rt.api_version, rt.plural, verb)


def test_the_claim_controller_role_lets_taint_eviction_evict_and_report() -> None:
    granted = _granted(render("claimController.enabled=true"))
    assert ("", "pods", "delete") in granted
    assert ("resource.k8s.io", "devicetaintrules/status", "update") in granted
