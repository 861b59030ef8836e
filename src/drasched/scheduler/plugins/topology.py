"""Topology domains for gangs: nodes grouped by the value of a node label.

``requiredTopologyKey``: the whole gang in one domain. ``preferredTopologyKey``: the
smallest domain that fits (docs/design.md: fewest nodes, then least free capacity of the
requested resources, then the label value in sort order), else anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from drasched.scheduler.framework.api import ADD, DELETE, UPDATE, ClusterEvent
from drasched.scheduler.podinfo import NodeInfo


@dataclass(frozen=True)
class Domain:
    value: str
    nodes: np.ndarray
    """Node indices, ascending."""
    mask: np.ndarray


def domains(nodes: Sequence[NodeInfo], key: str) -> list[Domain]:
    """Domains of ``key``; nodes without the label belong to none."""
    members: dict[str, list[int]] = {}
    for n in nodes:
        v = n.labels.get(key)
        if v is not None:
            members.setdefault(v, []).append(n.index)
    out = []
    for v in sorted(members):
        idx = np.array(members[v], dtype=np.int64)
        mask = np.zeros(len(nodes), dtype=bool)
        mask[idx] = True
        out.append(Domain(v, idx, mask))
    return out


def order_domains(doms: Sequence[Domain], idle: np.ndarray, alloc: np.ndarray, total: Mapping[int, float]) -> list[
        Domain]:
    """Domains that could hold ``total`` (row -> units), smallest and tightest first."""
    ranked: list[tuple[int, float, str, Domain]] = []
    for d in doms:
        free = 0.0
        fits = True
        for row, need in total.items():
            have = float(idle[row, d.nodes].sum())
            if have < need:
                fits = False
                break
            cluster = float(alloc[row].sum())
            free += have / cluster if cluster > 0 else 0.0
        if fits:
            ranked.append((len(d.nodes), free, d.value, d))
    ranked.sort(key=lambda t: (t[0], t[1], t[2]))
    return [t[3] for t in ranked]


class Topology:
    """Gangs kept inside one topology domain (``requiredTopologyKey``) or preferring one."""

    name = "topology"

    def events(self) -> tuple[ClusterEvent, ...]:
        return (ClusterEvent("Node", ADD), ClusterEvent("Node", UPDATE), ClusterEvent("Pod", DELETE),
                ClusterEvent("PodGroup", UPDATE))
