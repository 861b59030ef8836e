"""Scheduler configuration: defaults, loading, and errors that name every bad key."""

from __future__ import annotations

from pathlib import Path

import pytest

from drasched.scheduler.config import ConfigError, SchedulerConfig, config_from_dict, load_config, parse_duration


def test_defaults() -> None:
    cfg = load_config(None)
    assert cfg.actions == ("allocate", "reclaim", "preempt", "consolidate")
    assert cfg.node_order == "binpack" and cfg.cycle_period_seconds == 1.0
    assert cfg.preemption_budget == 1000 and cfg.preemption_nodes_per_task == 8
    assert cfg.schedules("drasched") and not cfg.schedules("default-scheduler")
    assert SchedulerConfig.embedded().schedules(None)
    assert cfg.resource_weights["nvidia.com/gpu"] == 10


def test_a_full_file(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("apiVersion: scheduling.drasched.io/v1alpha1\nkind: SchedulerConfiguration\n"
                 "schedulerNames: [a, b]\ncyclePeriod: 500ms\nnodeOrder: spread\n"
                 "plugins:\n  nodeOrder: {resourceWeights: {cpu: 2}}\n  taintToleration: {enabled: false}\n"
                 "gpu: {deviceClasses: [gpu.example.com]}\n")
    cfg = load_config(f)
    assert cfg.scheduler_names == ("a", "b") and cfg.cycle_period_seconds == 0.5 and cfg.node_order == "spread"
    assert cfg.resource_weights == {"cpu": 2.0}
    assert not cfg.enabled("taintToleration") and cfg.enabled("nodeAffinity")
    assert cfg.gpu_device_classes == frozenset({"gpu.example.com"})


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict({"nodeOrder": "random", "actions": ["allocate", "shuffle"], "cyclePeriod": "soon",
                          "plugins": {"magic": {}, "nodeOrder": {"resourceWeights": {"cpu": -1}, "x": 1}},
                          "extra": 1})
    text = str(err.value)
    for expected in ("extra: unknown key", "nodeOrder: must be one of binpack, spread, got 'random'",
                     "actions: unknown action 'shuffle'", "cyclePeriod: 'soon' is not a duration",
                     "plugins.magic: unknown plugin", "plugins.nodeOrder.resourceWeights.cpu: must be a number >= 0",
                     "plugins.nodeOrder.x: unknown argument"):
        assert expected in text


def test_preemption_settings() -> None:
    cfg = config_from_dict({"preemption": {"budget": 50, "nodesPerTask": 2}, "actions": ["allocate", "preempt"]})
    assert (cfg.preemption_budget, cfg.preemption_nodes_per_task, cfg.actions) == (50, 2, ("allocate", "preempt"))
    with pytest.raises(ConfigError) as err:
        config_from_dict({"preemption": {"budget": 0, "nodesPerTask": True, "depth": 3}})
    text = str(err.value)
    for expected in ("preemption.budget: must be an integer >= 1, got 0", "preemption.nodesPerTask: must be an "
                     "integer >= 1, got True", "preemption.depth: unknown key"):
        assert expected in text


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read scheduler configuration"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodeOrder: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_base_keeps_what_the_document_leaves_out() -> None:
    cfg = config_from_dict({"nodeOrder": "spread"}, SchedulerConfig.embedded())
    assert cfg.node_order == "spread" and cfg.scheduler_names == ()


def test_durations() -> None:
    assert parse_duration("2m") == 120 and parse_duration(3) == 3.0 and parse_duration("1.5s") == 1.5
    with pytest.raises(ValueError):
        parse_duration("1d")
