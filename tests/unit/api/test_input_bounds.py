"""Input the API server accepts but that once crashed drasched: each is now refused with a
message, or bounded, and ``drasched simulate`` finishes.

Upstream limits cited: object names are DNS-1123 subdomains of at most 253 characters
(``ValidateObjectMeta``); a Go ``time.Duration`` is int64 nanoseconds (``time.ParseDuration``
refuses longer); a ResourceSlice holds at most 128 devices (``ResourceSliceMaxDevices``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from drasched.api.duration import parse_go_duration
from drasched.api.eventname import MAX_NAME_LENGTH, event_name
from drasched.api.validation import check_subdomain
from drasched.cli import main
from drasched.node.sim_drivers import parse_sim_gpus
from drasched.quantity import Quantity, QuantityError
from drasched.scheduler.queues import MAX_QUEUE_DEPTH, build_queue_tree

Obj = dict[str, Any]


def simulate(tmp_path: Path, *docs: Obj) -> tuple[int, list[Obj]]:
    src = tmp_path / "in.yaml"
    src.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    out = tmp_path / "out.yaml"
    code = main(["simulate", str(src), "-q", "--include-events", "-o", str(out)])
    return code, [o for o in yaml.safe_load_all(out.read_text()) if o] if out.exists() else []


def node(name: str = "node-1", annotations: dict[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": annotations or {}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name: str, cpu: str = "1", **metadata: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", **metadata},
            "spec": {"schedulerName": "drasched", "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]}}


def events(objects: list[Obj], reason: str) -> list[Obj]:
    return [o for o in objects if o["kind"] == "Event" and o.get("reason") == reason]


# ---- Event names -------------------------------------------------------------------------------

@pytest.mark.parametrize("length", [1, 200, 236, 237, 252, 253])
def test_the_event_name_for_any_legal_object_name_is_legal(length: int) -> None:
    name = ("a-" * 200)[: length - 1] + "z"
    ev = event_name(name, "00000000000000ab")
    assert len(ev) <= MAX_NAME_LENGTH and check_subdomain("metadata.name", ev) == []
    if length <= 236:
        assert ev == f"{name}.00000000000000ab"  # upstream's form, unchanged when it fits


def test_two_long_names_that_share_a_prefix_get_different_event_names() -> None:
    a, b = "x" * 250 + "a", "x" * 250 + "b"
    assert event_name(a, "1") != event_name(b, "1")


def test_a_pod_named_with_253_characters_gets_its_failed_scheduling_event(tmp_path: Path) -> None:
    name = "p" * 253
    code, objects = simulate(tmp_path, node(), pod(name, cpu="64"))
    assert code in (0, 3)
    [ev] = [e for e in events(objects, "FailedScheduling") if e["involvedObject"]["name"] == name]
    assert len(ev["metadata"]["name"]) <= MAX_NAME_LENGTH


# ---- durations ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["9999999999999h", "9999999999h", "2562048h"])
def test_a_duration_longer_than_go_holds_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"longer than Go's time\.Duration holds"):
        parse_go_duration(text)


def test_the_longest_go_duration_still_parses() -> None:
    assert parse_go_duration("2562047h").days == 106751


def test_sim_duration_beyond_go_is_a_warning_and_the_pod_keeps_running(tmp_path: Path) -> None:
    code, objects = simulate(tmp_path, node(),
                             pod("p", annotations={"drasched.io/sim-duration": "9999999999h"}))
    assert code in (0, 3)
    assert events(objects, "InvalidSimDuration")
    [p] = [o for o in objects if o["kind"] == "Pod"]
    assert p["status"]["phase"] == "Running"


def test_queue_min_runtime_beyond_go_is_a_queue_problem_not_a_crash(tmp_path: Path) -> None:
    queue = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": "q"},
             "spec": {"minRuntime": "9999999999999h"}}
    code, objects = simulate(tmp_path, node(), queue, pod("p", labels={"drasched.io/queue": "q"}))
    assert code in (0, 3)
    [q] = [o for o in objects if o["kind"] == "Queue" and o["metadata"]["name"] == "q"]
    assert "minRuntime" in yaml.safe_dump(q["status"])


# ---- quantities --------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["9" * 5000, "9" * 5000 + "Gi", "0." + "1" * 5000, "1e" + "9" * 5000])
def test_a_quantity_of_thousands_of_digits_is_refused_not_a_crash(text: str) -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(text)


def test_an_exponent_with_leading_zeros_still_parses() -> None:
    assert Quantity.parse("1e" + "0" * 30 + "3") == Quantity.parse("1k")


def test_a_5000_digit_quantity_in_a_manifest_is_refused_by_simulate(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = simulate(tmp_path, node(), pod("p", cpu="9" * 5000))
    assert code == 2
    assert re.search(r"document 1: Pod default/p: .*spec.containers\[0\].resources", capsys.readouterr().err)


# ---- sim-gpus ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "message"), [
    ("count=1000000", "count must be at most 128"),
    ("count=" + str(10**20), "count must be at most 128"),
    ("computeCapability=x.y", "computeCapability must be MAJOR.MINOR"),
    ("driverVersion=abc", "driverVersion must be dotted numbers"),
])
def test_sim_gpus_out_of_bounds_is_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_sim_gpus(text)


def test_sim_gpus_up_to_one_slice_of_devices_is_accepted() -> None:
    assert parse_sim_gpus("count=128,computeCapability=8.0").count == 128


@pytest.mark.parametrize("text", ["count=1000000", "computeCapability=x.y"])
def test_a_bad_sim_gpus_annotation_is_an_invalid_sim_gpus_event(tmp_path: Path, text: str) -> None:
    code, objects = simulate(tmp_path, node(annotations={"drasched.io/sim-gpus": text}))
    assert code in (0, 3)
    [ev] = events(objects, "InvalidSimGpus")
    assert ev["involvedObject"]["name"] == "node-1"
    assert not [o for o in objects if o["kind"] == "ResourceSlice"]


# ---- queue depth -------------------------------------------------------------------------------

def queue_chain(n: int) -> list[Obj]:
    return [{"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": f"q{i:04d}"},
             "spec": {"parentQueue": f"q{i - 1:04d}"} if i else {}} for i in range(n)]


def test_a_chain_deeper_than_the_bound_is_cut_into_top_level_queues_with_a_problem() -> None:
    tree = build_queue_tree(queue_chain(1000), lambda r: r)
    assert max(len(tree.ancestors(name)) for name in tree.queues) == MAX_QUEUE_DEPTH + 1
    cut = [n for n, q in tree.queues.items() if any("levels of parent queues" in p for p in q.problems)]
    assert cut == [f"q{i:04d}" for i in range(MAX_QUEUE_DEPTH + 1, 1000, MAX_QUEUE_DEPTH + 1)]
    assert len(tree.subtree("q0000")) == MAX_QUEUE_DEPTH + 1


def test_a_chain_of_1000_queues_simulates(tmp_path: Path) -> None:
    code, objects = simulate(tmp_path, node(), *queue_chain(1000), pod("p", labels={"drasched.io/queue": "q0999"}))
    assert code in (0, 3)
    [p] = [o for o in objects if o["kind"] == "Pod"]
    assert p["spec"].get("nodeName") == "node-1"
