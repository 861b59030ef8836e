"""The scheduler ConfigMap edited while drasched runs: a bad edit keeps the last good
configuration (not the ``--config`` base) and says why, naming the ConfigMap and the field; the
next good edit applies; deleting the ConfigMap gives the base back.

kube-scheduler has no live reload: a bad file is refused at start and the running scheduler
keeps the configuration it has; KAI's operator likewise leaves the scheduler running with its
last rendered config when its ``SchedulingShard`` fails validation. Falling back to the base
would silently undo the operator's good settings because of one typo.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from drasched.api import kinds
from drasched.scheduler.config import SchedulerConfig
from drasched.scheduler.controller import SchedulerController
from drasched.sim.clock import VirtualClock
from drasched.sim.context import SimContext
from drasched.store.memory import MemoryStore
from tests.unit.scheduler.helpers import node

Obj = dict


def _cm(text: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "drasched-scheduler", "namespace": "kube-system"}, "data": {"config.yaml": text}}


def _edit(ctx: SimContext, text: str) -> None:
    cm = ctx.store.get(kinds.CONFIG_MAP, "drasched-scheduler", "kube-system")
    cm["data"] = {"config.yaml": text}
    ctx.store.update(cm)


def _events(ctx: SimContext) -> list[Obj]:
    return [e for e in ctx.store.list(kinds.EVENT).items if e["reason"] == "InvalidConfiguration"]


def test_a_bad_edit_keeps_the_last_good_configuration(caplog: pytest.LogCaptureFixture) -> None:
    clock = VirtualClock()
    ctx = SimContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)
    ctx.store.create(node("a", gpu=1))
    base = SchedulerConfig(node_order="binpack")
    ctx.store.create(_cm("nodeOrder: spread\n"))
    sc = SchedulerController(base)
    sc.reconcile(ctx)
    assert sc.config.node_order == "spread"  # the ConfigMap on top of the base

    with caplog.at_level(logging.WARNING, logger="drasched"):
        _edit(ctx, "nodeOrder: spread\npreemption: {budget: 0}\n")
        sc.reconcile(ctx)
    assert sc.config.node_order == "spread", "a bad edit must not fall back to the --config base"
    [ev] = _events(ctx)
    assert ev["involvedObject"]["name"] == "drasched-scheduler" and ev["type"] == "Warning"
    assert "ConfigMap kube-system/drasched-scheduler" in ev["message"]
    assert "preemption.budget: must be an integer >= 1, got 0" in ev["message"]
    assert "keeping the last good configuration (ConfigMap resourceVersion" in ev["message"]
    assert any("preemption.budget" in r.getMessage() for r in caplog.records)  # the log says it too

    _edit(ctx, "nodeOrder: binpack\npreemption: {budget: 7}\n")  # the next good edit applies
    sc.reconcile(ctx)
    assert (sc.config.node_order, sc.config.preemption_budget) == ("binpack", 7)
    assert sc.builder.config is sc.config

    ctx.store.delete(kinds.CONFIG_MAP, "drasched-scheduler", "kube-system")  # gone: the base again
    sc.reconcile(ctx)
    assert sc.config == base


def test_a_bad_configmap_from_the_start_keeps_the_base() -> None:
    clock = VirtualClock()
    ctx = SimContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)
    ctx.store.create(node("a", gpu=1))
    ctx.store.create(_cm("nodeOrder: sideways\n"))
    base = SchedulerConfig(node_order="spread")
    sc = SchedulerController(base)
    sc.reconcile(ctx)
    assert sc.config == base
    [ev] = _events(ctx)
    assert "nodeOrder" in ev["message"] and "keeping the configuration without the ConfigMap" in ev["message"]


def test_serve_watches_the_configmap_it_is_told() -> None:
    """``drasched serve --config-map NS/NAME`` (the Helm chart passes its own ConfigMap): the
    scheduler and the implicit gangs read that one, and the default one no more."""
    from drasched.controllers.workloads.gangs import ImplicitGangController
    from drasched.serve.main import build_controllers

    controllers = build_controllers(config_map="drasched-system/drasched-config")
    sched = next(c for c in controllers if isinstance(c, SchedulerController))
    gangs = next(c for c in controllers if isinstance(c, ImplicitGangController))
    assert sched.config_map == gangs.config_map == "drasched-system/drasched-config"
    clock = VirtualClock()
    ctx = SimContext(MemoryStore(clock=clock.now, auto_namespaces=True), clock)
    ctx.store.create(node("a", gpu=1))
    ctx.store.create(_cm("nodeOrder: sideways\n"))  # the default name: not read
    ctx.store.create({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "drasched-config", "namespace": "drasched-system"},
                      "data": {"config.yaml": "nodeOrder: spread\n"}})
    sched.reconcile(ctx)
    assert sched.config.node_order == "spread" and not _events(ctx)


def test_serve_refuses_a_bad_config_file_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from drasched.cli import main

    bad = tmp_path / "config.yaml"
    bad.write_text("nodeOrder: sideways\n")
    assert main(["serve", "--config", str(bad), "--kubeconfig", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("drasched serve: ") and "nodeOrder: must be one of binpack, spread" in err
    assert "Traceback" not in err
