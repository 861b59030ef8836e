"""The PodScheduled message's node reasons: upstream's words and upstream's order.

Upstream: ``FitError.Error`` (``pkg/scheduler/framework/types.go``) formats ``NoNodeAvailableMsg``
(``"0/%v nodes are available"``) and joins the ``"<count> <reason>"`` strings after
``sort.Strings``; NodeResourcesFit's reasons are ``"Too many pods"`` and ``"Insufficient <resource>"``
(``pkg/scheduler/framework/plugins/noderesources/fit.go``, ``fitsRequest``).
"""

from __future__ import annotations

from collections import Counter

from drasched.scheduler.messages import Diagnosis, queue_limit_message
from drasched.scheduler.plugins.fit import MSG_TOO_MANY_PODS, insufficient
from drasched.scheduler.plugins.predicates import MSG_AFFINITY, MSG_UNSCHEDULABLE


def test_fit_reasons_are_upstreams_words() -> None:
    assert insufficient("pods") == MSG_TOO_MANY_PODS == "Too many pods"
    assert insufficient("cpu") == "Insufficient cpu"
    assert insufficient("nvidia.com/gpu") == "Insufficient nvidia.com/gpu"


def test_reasons_are_sorted_as_go_sort_strings_does() -> None:
    d = Diagnosis(14, Counter({MSG_UNSCHEDULABLE: 2, "Insufficient cpu": 10, MSG_TOO_MANY_PODS: 1,
                               MSG_AFFINITY: 1}))
    # bytewise: digits before letters, "10 ..." before "2 ...", capitals before lower case
    assert d.message() == ("0/14 nodes are available: 1 Too many pods, 1 node(s) didn't match Pod's node "
                           "affinity/selector, 10 Insufficient cpu, 2 node(s) were unschedulable.")


def test_reasons_not_about_nodes_follow_the_sorted_node_reasons() -> None:
    d = Diagnosis(2, Counter({"Insufficient cpu": 1, MSG_UNSCHEDULABLE: 1}), extra=["b later", "a last"])
    assert d.message() == "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable, b later, a last."
    assert queue_limit_message(3, "team", "cpu") == "0/3 nodes are available: queue team over its limit for cpu."
