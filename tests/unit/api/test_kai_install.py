"""KAI's installed PriorityClasses in a simulated KAI cluster (KAI-Scheduler docs/priority/README.md)."""

from __future__ import annotations

from drasched.api.kai_install import holds_kai_objects, kai_priority_classes

KAI_QUEUE = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "q"}}
TRANSLATED_QUEUE = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {
    "name": "q", "annotations": {"drasched.io/translated-from": "scheduling.run.ai/v2 Queue"}}}
OUR_QUEUE = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": "q"}}


def test_kai_objects_as_written_or_translated_mean_a_kai_cluster() -> None:
    assert holds_kai_objects([KAI_QUEUE])
    assert holds_kai_objects([TRANSLATED_QUEUE])
    assert not holds_kai_objects([OUR_QUEUE])


def test_the_four_classes_kai_installs_with_their_values() -> None:
    classes = kai_priority_classes([TRANSLATED_QUEUE])
    assert [(c["metadata"]["name"], c["value"]) for c in classes] == [
        ("train", 50), ("build-preemptible", 75), ("build", 100), ("inference", 125)]
    assert all(c["globalDefault"] is False and "preemptionPolicy" not in c for c in classes)
    assert classes[0]["metadata"]["uid"] == kai_priority_classes([KAI_QUEUE])[0]["metadata"]["uid"]


def test_none_without_kai_objects_and_none_the_user_wrote_or_the_store_holds() -> None:
    assert kai_priority_classes([OUR_QUEUE]) == []
    written = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "build"}, "value": 7}
    names = [c["metadata"]["name"] for c in kai_priority_classes([KAI_QUEUE, written], existing={"train"})]
    assert names == ["build-preemptible", "inference"]
