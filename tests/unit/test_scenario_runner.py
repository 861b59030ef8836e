"""The scenario runner refuses an ``expect`` block that would check nothing.

A misspelt key (``unschedulabel``) used to be ignored, so the scenario passed whatever the
scheduler did; an empty message is a substring of every message; a pod expected pending
without a reason passes for any reason, including the wrong one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.runner import ScenarioError, check_expectations, load_scenario

POD = """
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers: [{name: c, image: busybox}]
"""


def _scenario(tmp_path: Path, expect: str, head_extra: str = "") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"apiVersion: test.drasched.io/v1\nkind: Scenario\ndescription: a test\n{head_extra}"
                    f"expect:\n{expect}{POD}")
    return path


def test_a_well_formed_scenario_loads() -> None:
    here = Path(__file__).resolve().parents[1] / "scenarios"
    for path in sorted(here.rglob("*.yaml")):
        load_scenario(path)  # every committed scenario passes the same checks


def test_a_misspelt_pod_key_is_refused(tmp_path: Path) -> None:
    path = _scenario(tmp_path, "  pods:\n    default/p: {node: null, unschedulabel: no nodes}\n")
    with pytest.raises(ScenarioError, match="unknown key 'unschedulabel'"):
        load_scenario(path)


def test_an_unknown_section_is_refused(tmp_path: Path) -> None:
    path = _scenario(tmp_path, "  pod:\n    default/p: {node: n1}\n")
    with pytest.raises(ScenarioError, match=r"expect\.pod: unknown section"):
        load_scenario(path)


def test_an_unknown_key_in_the_scenario_document_is_refused(tmp_path: Path) -> None:
    path = _scenario(tmp_path, "  pods:\n    default/p: {node: n1}\n", head_extra="exitcode: 1\n")
    with pytest.raises(ScenarioError, match="unknown key 'exitcode'"):
        load_scenario(path)


@pytest.mark.parametrize("entry", [
    "  pods:\n    default/p: {node: null, unschedulable: ''}\n",
    "  events:\n  - {object: Pod/default/p, reason: Scheduled, messageContains: ''}\n",
    "  queues:\n    q: {valid: false, conditionContains: ' '}\n",
])
def test_an_empty_message_is_refused(tmp_path: Path, entry: str) -> None:
    with pytest.raises(ScenarioError, match="empty message matches anything"):
        load_scenario(_scenario(tmp_path, entry))


@pytest.mark.parametrize("want", ["{node: null}", "{phase: Pending}"])
def test_a_pod_expected_pending_must_name_why(tmp_path: Path, want: str) -> None:
    with pytest.raises(ScenarioError, match="must name why"):
        load_scenario(_scenario(tmp_path, f"  pods:\n    default/p: {want}\n"))


def test_a_bound_pod_still_pending_its_kubelet_needs_no_reason(tmp_path: Path) -> None:
    load_scenario(_scenario(tmp_path, "  pods:\n    default/p: {node: n1, phase: Pending}\n"))


def test_the_reason_is_compared(tmp_path: Path) -> None:
    scn = load_scenario(_scenario(tmp_path, "  pods:\n    default/p: {node: null, unschedulable: no nodes}\n"))
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": {},
           "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                      "message": "0/1 nodes are available: 1 Insufficient cpu."}]}}
    problems = check_expectations(scn, {"Pod:default/p": pod})
    assert problems == ["pod default/p: expected message containing 'no nodes', "
                        "got '0/1 nodes are available: 1 Insufficient cpu.'"]
