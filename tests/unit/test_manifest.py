"""Manifest loading: formats, List kinds, and errors that say where the problem is."""

from __future__ import annotations

from pathlib import Path

import pytest

from drasched.api.manifest import ManifestError, dump_yaml, load_paths, parse_documents

POD = """
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers: [{name: c, image: busybox}]
"""


def test_multi_document_yaml_and_list_kind(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(POD + "---\n" + """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}}
- {apiVersion: v1, kind: Node, metadata: {name: n2}}
""")
    loaded = load_paths([str(tmp_path)])
    assert [o.obj["metadata"]["name"] for o in loaded] == ["p", "n1", "n2"]
    assert loaded[2].index == 1


def test_json_file(tmp_path: Path) -> None:
    (tmp_path / "n.json").write_text('{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}')
    assert load_paths([str(tmp_path / "n.json")])[0].obj["kind"] == "Node"


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: [\n")
    with pytest.raises(ManifestError, match=r"bad\.yaml: line \d+ column \d+: malformed YAML"):
        load_paths([str(f)])


def test_unknown_kind_names_document_and_object(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text(POD + "---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")
    with pytest.raises(ManifestError, match=r'x\.yaml: document 1: Widget w: no kind "Widget"'):
        load_paths([str(f)])


def test_invalid_field_names_the_field_path(tmp_path: Path) -> None:
    f = tmp_path / "claim.yaml"
    f.write_text("""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: default}
spec:
  devices:
    requests:
    - name: Bad_Name
      exactly: {deviceClassName: gpu.example.com}
""")
    want = r"ResourceClaim default/c: spec\.devices\.requests\[0\]\.name: Invalid value"
    with pytest.raises(ManifestError, match=want):
        load_paths([str(f)])


def test_missing_file() -> None:
    with pytest.raises(ManifestError, match="no such file"):
        load_paths(["/nonexistent/x.yaml"])


def test_dump_puts_identity_first_and_is_stable() -> None:
    obj = {"spec": {"b": 1}, "metadata": {"name": "n"}, "kind": "Node", "apiVersion": "v1"}
    text = dump_yaml([obj])
    assert text.startswith("---\napiVersion: v1\nkind: Node\nmetadata:")
    assert parse_documents(text, "x")[0].obj == obj


# ---- every refusal at once ------------------------------------------------------------------

BAD_POD = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers: [{{name: Bad_Name, image: busybox}}]
"""


def test_every_invalid_object_of_a_file_is_reported(tmp_path: Path) -> None:
    f = tmp_path / "pods.yaml"
    f.write_text(BAD_POD.format(name="p1") + "---\n" + POD + "---\n" + BAD_POD.format(name="p2"))
    with pytest.raises(ManifestError) as err:
        load_paths([str(f)])
    assert [e.split(": spec.")[0] for e in err.value.errors] == [
        f"{f}: document 0: Pod default/p1", f"{f}: document 2: Pod default/p2"]
    assert err.value.summary() == "2 object(s) rejected"


def test_an_unknown_kind_does_not_hide_other_files_refusals(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")
    (tmp_path / "b.yaml").write_text(BAD_POD.format(name="p"))
    (tmp_path / "c.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: [\n")
    with pytest.raises(ManifestError) as err:
        load_paths([str(tmp_path), str(tmp_path / "missing.yaml")])
    errors = err.value.errors
    assert len(errors) == 4
    assert errors[0].startswith(f'{tmp_path / "a.yaml"}: document 0: Widget w: no kind "Widget"')
    assert errors[1].startswith(f'{tmp_path / "b.yaml"}: document 0: Pod default/p: spec.containers[0].name')
    assert "c.yaml: line" in errors[2] and "malformed YAML" in errors[2]
    assert errors[3].endswith("missing.yaml: no such file or directory")
    assert err.value.summary() == "2 file(s) not read, 2 object(s) rejected"


def test_documents_that_are_not_objects_are_all_reported_and_the_rest_read(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as err:
        parse_documents("just text\n---\n" + POD + "---\n- 3\n", "x.yaml")
    assert err.value.errors == ["x.yaml: document 0: expected a Kubernetes object (a mapping), got str",
                                "x.yaml: document 2: expected a Kubernetes object (a mapping), got int"]


# ---- the same object given twice --------------------------------------------------------------

NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: gpu-test1}\n"
TEMPLATE = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: single-gpu, namespace: gpu-test1}}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {{deviceClassName: gpu.nvidia.com, count: {count}}}
"""


def test_an_identical_repeat_in_another_file_is_read_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # NVIDIA's gpu-test1.yaml and gpu-test7.yaml both declare these (kubectl apply: "unchanged")
    (tmp_path / "gpu-test1.yaml").write_text(NAMESPACE + "---" + TEMPLATE.format(count=1))
    (tmp_path / "gpu-test7.yaml").write_text(NAMESPACE + "---" + TEMPLATE.format(count=1) + "---\n" + POD)
    loaded = load_paths([str(tmp_path)])
    assert [(o.obj["kind"], o.source.rsplit("/", 1)[1]) for o in loaded] == [
        ("Namespace", "gpu-test1.yaml"), ("ResourceClaimTemplate", "gpu-test1.yaml"), ("Pod", "gpu-test7.yaml")]
    assert capsys.readouterr().err == ""


def test_a_repeat_without_the_default_namespace_is_the_same_object(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(POD + "---\n" + POD.replace(", namespace: default", ""))
    assert len(load_paths([str(tmp_path)])) == 1


def test_a_repeat_with_other_content_names_both_places(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(NAMESPACE + "---" + TEMPLATE.format(count=1))
    (tmp_path / "b.yaml").write_text(NAMESPACE + "---" + TEMPLATE.format(count=2))
    with pytest.raises(ManifestError) as err:
        load_paths([str(tmp_path)])
    assert err.value.errors == [
        f"{tmp_path / 'b.yaml'}: document 1: ResourceClaimTemplate gpu-test1/single-gpu: defined again with "
        f"different content (first at {tmp_path / 'a.yaml'}: document 1; they differ at "
        "spec.spec.devices.requests[0].exactly.count): give each object once, or repeat it unchanged"]


# ---- built-in kinds drasched does not model ----------------------------------------------------

CHART = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvidia-dra-driver, namespace: kube-system}
spec:
  selector: {matchLabels: {a: b}}
  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: plugin, image: driver}]}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: dra-driver}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: dra-driver-2}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: default}
"""


def test_builtin_kinds_not_modelled_are_left_out_with_one_warning_per_kind(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "chart.yaml"
    f.write_text(CHART + "---\n" + POD)
    # a DaemonSet is run (drasched.controllers.workloads.daemonset): kept, with no warning
    assert [o.obj["kind"] for o in load_paths([str(f)])] == ["DaemonSet", "Pod"]
    assert capsys.readouterr().err.splitlines() == [
        f"warning: {f}: document 1: CronJob default/nightly: drasched simulate does not run "
        "CronJobs (no Jobs are created from them); left out",
        f"warning: {f}: document 2: ClusterRole dra-driver and 1 more ClusterRole object(s): does not affect "
        "scheduling; left out",
        f"warning: {f}: document 4: Service default/svc: does not affect scheduling; left out"]


def test_convert_keeps_builtin_kinds_it_does_not_read(tmp_path: Path) -> None:
    f = tmp_path / "chart.yaml"
    f.write_text(CHART)
    assert [o.obj["kind"] for o in load_paths([str(f)], validate=False, translate=False)] == [
        "DaemonSet", "CronJob", "ClusterRole", "ClusterRole", "Service"]


def test_a_builtin_kind_in_a_version_kubernetes_never_served_is_refused_with_a_hint(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text("apiVersion: batch/v2\nkind: CronJob\nmetadata: {name: c}\n")
    with pytest.raises(ManifestError, match=r'no kind "CronJob" is registered for version "batch/v2" '
                                            r"\(Kubernetes serves CronJob as batch/v1, which drasched leaves out\)"):
        load_paths([str(f)])


def test_a_served_kind_keeps_its_hint(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text("apiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: d}\n")
    with pytest.raises(ManifestError, match=r"\(drasched serves Deployment as apps/v1\)"):
        load_paths([str(f)])
    f.write_text("apiVersion: apps/v1beta2\nkind: DaemonSet\nmetadata: {name: d}\n")
    with pytest.raises(ManifestError, match=r"\(drasched serves DaemonSet as apps/v1\)"):
        load_paths([str(f)])


def test_unmodeled_kinds_and_served_kinds_do_not_overlap() -> None:
    from drasched.api import kinds

    served = {(rt.group, rt.kind) for rt in (*kinds.ALL, *kinds.FOREIGN)}
    assert not served & set(kinds.UNMODELED)


UPSTREAM_GANG = """
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: train, namespace: ml}
spec:
  podGroupTemplates: [{name: workers, schedulingPolicy: {gang: {minCount: 2}}}]
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: old, namespace: ml}
spec:
  schedulingPolicy: {gang: {minCount: 3}}
  priority: 5
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: workers, namespace: ml}
spec:
  workloadRef: {workloadName: train, templateName: workers}
  schedulingPolicy: {gang: {minCount: 2}}
"""


def test_upstream_gang_objects_are_kept_as_written_and_their_warnings_printed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The embedded store serves the gang API (``kinds.UPSTREAM_GANG``): a Workload and PodGroups are
    read as written, in their own versions, and stored without drasched's PodGroup defaults; what
    their translation cannot use is still a warning before the run."""
    import yaml

    from drasched.api import kinds
    from drasched.sim.runner import Simulation

    f = tmp_path / "gang.yaml"
    f.write_text(UPSTREAM_GANG)
    loaded = load_paths([str(f)])
    assert [item.obj for item in loaded] == list(yaml.safe_load_all(UPSTREAM_GANG))
    assert capsys.readouterr().err == ("warning: scheduling.k8s.io/v1alpha2 PodGroup ml/old: spec.priority 5 has no "
                                       "meaning here: drasched takes a group's priority from spec.priorityClassName, "
                                       "else from its pods\n")
    sim = Simulation(controllers=[])
    sim.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}, *(item.obj for item in loaded)])
    old = sim.store.peek(kinds.UPSTREAM_POD_GROUP_V1ALPHA2, "old", "ml")
    assert old is not None and old["spec"] == {"schedulingPolicy": {"gang": {"minCount": 3}}, "priority": 5}
    assert sim.store.list(kinds.POD_GROUP).items == []
    assert [(o["kind"], o["metadata"]["name"]) for o in sim.store.all_objects() if o["kind"] != "Namespace"] == [
        ("Workload", "train"), ("PodGroup", "workers"), ("PodGroup", "old")], "Workloads, then v1beta1, v1alpha2"


def test_an_upstream_pod_group_of_the_wrong_shape_is_refused_in_its_own_terms(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: g, namespace: ml}\n"
                 "spec: {schedulingPolicy: {gang: {minCount: two}}}\n")
    with pytest.raises(ManifestError, match=r"PodGroup ml/g: .*spec\.schedulingPolicy\.gang\.minCount: expected "):
        load_paths([str(f)])
