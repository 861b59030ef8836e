"""The plugin framework: registry and configuration, events, memo keys, external plugins, journal."""

from __future__ import annotations

import io
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from drasched.cli import main as cli_main
from drasched.scheduler.config import ConfigError, SchedulerConfig, config_from_dict, load_config
from drasched.scheduler.cycle import run_cycle
from drasched.scheduler.framework.api import (
    ADD,
    UPDATE,
    ClaimAllocation,
    ClusterEvent,
    Filter,
    NodeCheck,
    RowFilter,
    StaticFilter,
)
from drasched.scheduler.framework.profile import Profile, default_profile
from drasched.scheduler.framework.registry import BUILTINS, STRING, PluginContext, PluginSpec
from drasched.scheduler.podinfo import NodeInfo, PodInfo, parse_pod
from drasched.scheduler.session import Place
from tests.unit.scheduler.helpers import World, no_victims, node, placed_nodes, pod, podgroup

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "plugins"
THIS = "tests.unit.scheduler.test_framework"


# ---------------------------------------------------------------------- an external plugin for these tests


class SameTeam:
    """A static filter: pods labelled ``team`` go only to nodes with the same ``team`` label."""

    def __init__(self, name: str, label: str) -> None:
        self.name = name
        self.label = label

    def events(self) -> tuple[ClusterEvent, ...]:
        return (ClusterEvent("Node", UPDATE),)

    def signature(self, pod: PodInfo) -> Any:
        return (pod.obj["metadata"].get("labels") or {}).get(self.label)

    def prepare(self, pod: PodInfo) -> NodeCheck | None:
        team = self.signature(pod)
        if team is None:
            return None
        return lambda n: None if n.labels.get(self.label) == team else f"node(s) of another {self.label}"


def _same_team(ctx: PluginContext) -> SameTeam:
    if ctx.args.get("label") == "forbidden":
        raise ValueError("label 'forbidden' is reserved")
    return SameTeam(ctx.name, str(ctx.args.get("label", "team")))


PLUGIN = PluginSpec(_same_team, {"label": STRING})


def team_config(**settings: Any) -> SchedulerConfig:
    return config_from_dict({"schedulerNames": [], "plugins": {"sameTeam": {"module": THIS, **settings}}})


# ---------------------------------------------------------------------- configuration


@pytest.mark.parametrize(("plugins", "expected"), [
    ({"magic": {}}, "plugins.magic: unknown plugin"),
    ({"taintToleration": {"enabled": "no"}}, "plugins.taintToleration.enabled: must be true or false, got 'no'"),
    ({"nodeSelector": {"weight": 2}}, "plugins.nodeSelector.weight: nodeSelector does not score nodes"),
    ({"nodeOrder": {"weight": "heavy"}}, "plugins.nodeOrder.weight: must be a number >= 0, got 'heavy'"),
    ({"nodeOrder": {"resourceWeights": ["cpu"]}}, "plugins.nodeOrder.resourceWeights: must be a map"),
    ({"nodeOrder": {"resourceWeights": {"cpu": "x"}}}, "plugins.nodeOrder.resourceWeights.cpu: must be a number"),
    ({"dra": {"devices": 1}}, "plugins.dra.devices: unknown argument (known: enabled)"),
    ({"dra": "off"}, "plugins.dra: must be a map of settings"),
    ([], "plugins: must be a map from plugin name to its settings"),
    ({"x": {"module": 7}}, "plugins.x.module: must be a non-empty string, got 7"),
    ({"x": {"module": "no.such.module"}}, "plugins.x.module: cannot import no.such.module: ModuleNotFoundError"),
    ({"x": {"module": "missing/plugin.py"}}, "plugins.x.module: no Python file at"),
    ({"x": {"module": "json"}}, "plugins.x.module: json defines no PLUGIN = PluginSpec(...)"),
    ({"dra": {"module": THIS}}, "plugins.dra.module: dra is a built-in plugin name"),
    ({"t": {"module": THIS, "colour": "red"}}, "plugins.t.colour: unknown argument (known: enabled, label)"),
    ({"t": {"module": THIS, "label": 3}}, "plugins.t.label: must be a non-empty string, got 3"),
    ({"t": {"module": THIS, "label": "forbidden"}}, "plugins.t: ValueError: label 'forbidden' is reserved"),
])
def test_bad_plugin_settings_are_refused_naming_the_key(plugins: Any, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict({"plugins": plugins})
    assert expected in str(err.value)


@pytest.mark.parametrize("doc", [
    {"schedulerNames": "drasched"}, {"schedulerNames": [1]}, {"actions": {"allocate": 1}}, {"cyclePeriod": [1]},
    {"cyclePeriod": {"s": 1}}, {"nodeOrder": ["spread"]}, {"nodeOrder": {"a": 1}}, {"gpu": []},
    {"gpu": {"deviceClasses": "x"}}, {"preemption": 5}, {"preemption": {"budget": "many"}},
    {"preemption": {"budget": [1]}}, {"kind": ["x"]}, {1: 2}, {"plugins": {1: {}}}, {"plugins": {"dra": []}},
    {"plugins": {"nodeOrder": {"resourceWeights": {1: 2}}}}, {"plugins": {"x": {"module": ["a"]}}},
    {"plugins": {"x": {"module": {"a": 1}}}}, {"plugins": {"dra": {"enabled": None}}},
])
def test_a_wrong_type_anywhere_is_a_config_error_naming_the_key(doc: dict) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict(doc)
    first_key = str(next(iter(doc)))
    assert first_key in str(err.value)


@pytest.mark.parametrize("data", [["config.yaml"], {"config.yaml": 5}, {"config.yaml": {"nodeOrder": "spread"}},
                                  "nodeOrder: spread", {"config.yaml": "a: 2001-13-45"},
                                  {"config.yaml": "[" * 5000}])
def test_a_malformed_configmap_is_reported_not_raised(data: Any) -> None:
    from drasched.scheduler.controller import config_from_config_map

    with pytest.raises(ConfigError) as err:
        config_from_config_map({"metadata": {"name": "drasched-scheduler"}, "data": data}, SchedulerConfig())
    assert "ConfigMap kube-system/drasched-scheduler" in str(err.value)


# ---------------------------------------------------------------------- registry and profile


def test_every_builtin_is_enabled_by_default_and_bound_to_its_extension_points() -> None:
    profile = default_profile()
    assert list(profile.by_name) == list(BUILTINS)
    # upstream's Filter order (pkg/scheduler/apis/config/v1/default_plugins.go): NodeUnschedulable,
    # TaintToleration, NodeAffinity (which holds nodeSelector too)
    assert [f.name for f in profile.static_filters] == ["implicitGangGate", "nodeUnschedulable", "taintToleration",
                                                        "nodeAffinity", "nodeSelector"]
    assert [f.name for f in profile.row_filters] == ["podCount", "resourceFit"]
    weights = {s.name: s.weight for s in profile.scorers}
    assert {n: weights.get(n) for n in ("nodeAffinity", "taintToleration", "nodeOrder")} == {
        "nodeAffinity": 2, "taintToleration": 3, "nodeOrder": 1}  # upstream's default weights
    assert profile.queue_order is not None and profile.queue_order.name == "fairShare"
    assert profile.claim_allocation is not None and profile.dra_extended and profile.topology


def test_every_builtin_declares_the_events_that_may_make_a_rejected_pod_fit() -> None:
    for name, plugin in default_profile().by_name.items():
        events = plugin.events()
        assert all(isinstance(e, ClusterEvent) and e.action in ("Add", "Update", "Delete") for e in events), name
        rejects = isinstance(plugin, StaticFilter | Filter | RowFilter | ClaimAllocation) or name in (
            "topology", "extendedResources", "fairShare")  # a queue's share changing lets its gangs go
        assert bool(events) == rejects, name  # a pure scorer rejects nothing


def test_requeue_events_are_the_union_of_the_named_plugins() -> None:
    profile = default_profile()
    assert profile.requeue_events(["taintToleration"]) == {ClusterEvent("Node", ADD), ClusterEvent("Node", UPDATE)}
    assert ClusterEvent("ResourceSlice", ADD) in profile.requeue_events(["dra"])
    assert ClusterEvent("ResourceSlice", ADD) not in profile.requeue_events(["taintToleration", "nodeOrder"])
    assert profile.requeue_events(["noSuchPlugin"]) == frozenset()


def test_static_key_is_built_from_the_enabled_static_filters() -> None:
    a = pod("a", cpu="1", nodeSelector={"pool": "x"})
    b = pod("b", cpu="1", nodeSelector={"pool": "y"})
    on = default_profile()
    off = Profile.from_config(config_from_dict({"plugins": {"nodeSelector": {"enabled": False}}}))
    assert parse_pod("d/a", a, {}, on.pod_keys).static_key != parse_pod("d/b", b, {}, on.pod_keys).static_key
    assert parse_pod("d/a", a, {}, off.pod_keys).static_key == parse_pod("d/b", b, {}, off.pod_keys).static_key
    # requests still tell pods apart for the session's other memos
    c = pod("c", cpu="2", nodeSelector={"pool": "x"})
    assert parse_pod("d/a", a, {}, off.pod_keys).eq_key != parse_pod("d/c", c, {}, off.pod_keys).eq_key


def test_an_external_static_filters_signature_enters_the_memo_key() -> None:
    team = Profile.from_config(team_config())
    x = pod("x", cpu="1")
    y = pod("y", cpu="1")
    x["metadata"]["labels"]["team"] = "red"
    y["metadata"]["labels"]["team"] = "blue"
    assert parse_pod("d/x", x, {}, team.pod_keys).static_key != parse_pod("d/y", y, {}, team.pod_keys).static_key
    plain = default_profile()
    assert parse_pod("d/x", x, {}, plain.pod_keys).static_key == parse_pod("d/y", y, {}, plain.pod_keys).static_key


def test_an_external_static_filter_from_configuration_filters_and_explains() -> None:
    p1 = pod("p1", cpu="1")
    p1["metadata"]["labels"]["team"] = "blue"
    objs = [node("a", {"team": "red"}), node("b", {"team": "blue"}), p1]
    assert placed_nodes(World(objs, team_config()).cycle()) == {"p1": "b"}
    p2 = pod("p2", cpu="1")
    p2["metadata"]["labels"]["team"] = "green"
    result = World([*objs[:2], p2], team_config()).cycle()
    cond = result.pod_conditions[0][1]
    assert cond["message"] == no_victims("0/2 nodes are available: 2 node(s) of another team.", 0, 2)
    assert placed_nodes(World([*objs[:2], p2], team_config(enabled=False)).cycle()) == {"p2": "a"}


def test_two_scorers_combine_normalised_scores_by_weight() -> None:
    objs = [node("big", gpu=8), node("medium", gpu=4), node("small", gpu=2), pod("p", gpu=1)]
    module = str(EXAMPLE / "fewest_free_gpus.py")

    def placed(weight: float) -> str:
        cfg = config_from_dict({"schedulerNames": [], "nodeOrder": "spread",
                                "plugins": {"fewestFreeGpus": {"module": module, "weight": weight}}})
        return placed_nodes(World(objs, cfg).cycle())["p"]

    assert placed(0) == "big"  # spread alone
    assert placed(3) == "small"


# ---------------------------------------------------------------------- the example plugin


def test_the_example_plugin_works_from_the_configmap_in_simulate(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(ROOT)  # the example names its module relative to the repository root
    out = tmp_path / "out.yaml"
    with redirect_stderr(io.StringIO()):
        code = cli_main(["simulate", str(EXAMPLE / "fewest-free-gpus"), "--output", str(out)])
    assert code == 0
    pods = [o for o in yaml.safe_load_all(out.read_text()) if o and o["kind"] == "Pod"]
    assert [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods] == [("one-gpu", "small")]


def test_the_example_plugin_works_in_serve_from_its_config_file(tmp_path: Path) -> None:
    from drasched.scheduler.controller import SchedulerController
    from drasched.serve.main import build_controllers

    path = tmp_path / "scheduler.yaml"
    path.write_text(yaml.safe_dump({"schedulerNames": ["drasched"], "nodeOrder": "spread", "plugins": {
        "fewestFreeGpus": {"module": str(EXAMPLE / "fewest_free_gpus.py"), "weight": 3}}}))
    sched = next(c for c in build_controllers(config_path=str(path)) if isinstance(c, SchedulerController))
    assert "fewestFreeGpus" in sched.builder.profile.by_name
    w = World([node("big", gpu=8), node("medium", gpu=4), node("small", gpu=2), pod("p", gpu=1)])
    w.cache.sync(w.store)
    result = run_cycle(sched.builder.build(w.cache), sched.config, "2026-01-01T00:00:00Z")
    assert placed_nodes(result) == {"p": "small"}
    assert load_config(path).plugins[0].module == str(EXAMPLE / "fewest_free_gpus.py")


# ---------------------------------------------------------------------- journal and snapshot


def test_the_journal_records_typed_operations_and_a_rollback_reverts_them() -> None:
    w = World([node("a", gpu=2), podgroup("g", 3), *[pod(f"g{i}", gpu=1, group="g") for i in range(3)]])
    s = w.session()
    g = s.snap.groups["default/g"]
    before = s.idle.copy()
    stmt = s.statement()
    from drasched.scheduler.actions.task import place_task

    assert place_task(s, stmt, g, g.pending[0], None) is None
    assert [type(op) for op in s.operations()] == [Place]
    assert not np.array_equal(s.idle, before)
    stmt.rollback()
    assert s.operations() == () and np.array_equal(s.idle, before) and s.placements == {}
    assert not hasattr(s, "journal")


def test_the_snapshot_is_read_only() -> None:
    snap = World([node("a", gpu=2)]).snapshot()
    with pytest.raises(ValueError):
        snap.idle[0, 0] = 1.0
    with pytest.raises(AttributeError):
        snap.nodes = []  # type: ignore[misc]
    assert isinstance(snap.nodes[0], NodeInfo)


# ---------------------------------------------------------------------- a victim filter


class SparePods:
    """A victim filter: pods named in ``names`` are never evicted."""

    name = "sparePods"

    def __init__(self, *names: str) -> None:
        self.names = set(names)

    def events(self) -> tuple[ClusterEvent, ...]:
        return ()

    def protects(self, session: Any, victim: Any) -> str | None:
        spared = [p.name for p, _ in victim.pods if p.name in self.names]
        return f"pod {spared[0]} is spared by sparePods" if spared else None


def test_a_victim_filter_protects_gangs_from_preemption() -> None:
    from tests.unit.scheduler.test_preempt import _node_of_low_pods

    objs = _node_of_low_pods(pod("h", gpu=1, queue="q", priorityClassName="high"))
    assert [e.victim.name for e in World(objs).cycle().evictions] == ["l2"]
    w = World(objs)
    w.builder.profile = Profile([*default_profile().plugins, SparePods("l2")])
    assert [e.victim.name for e in w.cycle().evictions] == ["l1"]


def test_serve_loads_from_its_configmap_only_the_plugin_modules_its_config_file_names(tmp_path: Path) -> None:
    from drasched.scheduler.controller import config_from_config_map

    module = str(EXAMPLE / "fewest_free_gpus.py")
    cm = {"metadata": {}, "data": {"config.yaml": yaml.safe_dump({"plugins": {"f": {"module": module}}})}}
    assert config_from_config_map(cm, SchedulerConfig()).plugins[0].module == module  # embedded: any
    with pytest.raises(ConfigError) as err:
        config_from_config_map(cm, SchedulerConfig(), any_module=False)
    assert f"plugins.f.module: {module} is not among the modules the configuration file names (none)" in str(err.value)
    named = config_from_dict({"plugins": {"f": {"module": module, "weight": 2}}})
    assert config_from_config_map(cm, named, any_module=False).plugins[0].weight == 1.0
