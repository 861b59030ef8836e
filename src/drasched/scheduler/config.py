"""The scheduler's one YAML configuration: defaults, loading, and validation with clear errors.

Example (every key optional)::

    apiVersion: scheduling.drasched.io/v1alpha1
    kind: SchedulerConfiguration
    schedulerNames: [drasched]        # pods whose spec.schedulerName we schedule ([] = every pod)
    actions: [allocate, reclaim, preempt, consolidate]
    cyclePeriod: 1s
    nodeOrder: binpack                # or spread
    plugins:                          # built-ins are on unless enabled: false (see
                                      # framework/registry.py BUILTINS and each class's
                                      # docstring for what disabling does)
      nodeOrder: {resourceWeights: {nvidia.com/gpu: 10, cpu: 1, memory: 1}, weight: 1}
      taintToleration: {enabled: true}
      fewestFreeGpus: {module: examples/plugins/fewest_free_gpus.py, weight: 3}  # external
    gpu:
      deviceClasses: [gpu.example.com]  # DeviceClasses that serve GPUs (besides those whose
                                        # extendedResourceName is nvidia.com/gpu)
    preemption:
      budget: 1000                      # victim-set simulations per cycle (reclaim, preempt,
                                        # consolidate together); what is left waits a cycle
      nodesPerTask: 8                   # nodes simulated per pending pod, best estimate first

Consolidation is one of the default actions whatever ``nodeOrder`` says (a spread strategy
leaves holes only consolidation closes, so it is never off by default); drop it from ``actions`` to turn it off.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from drasched.scheduler.constants import GPU, SCHEDULER_NAME
from drasched.scheduler.framework.registry import BUILTINS, PluginSetting, parse_plugins

ACTIONS = ("allocate", "reclaim", "preempt", "consolidate")
"""Actions this build knows, in the order a cycle may run them (all on by default)."""

STRATEGIES = ("binpack", "spread")
PLUGINS = tuple(BUILTINS)
_TOP_KEYS = ("apiVersion", "kind", "schedulerNames", "actions", "cyclePeriod", "nodeOrder", "plugins", "gpu",
             "preemption", "implicitGangs")
"""``implicitGangs`` ({workload kind: true/false}) is read by the implicit-gang controller
(drasched.controllers.workloads.gangs), not by the scheduler."""
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)$")
_DURATION_SCALE = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
DEFAULT_WEIGHTS = {GPU: 10.0, "cpu": 1.0, "memory": 1.0}


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names every bad key."""


@dataclass(frozen=True)
class SchedulerConfig:
    """Validated settings; build with :func:`load_config` or use the defaults."""

    scheduler_names: tuple[str, ...] = (SCHEDULER_NAME,)
    actions: tuple[str, ...] = ACTIONS
    cycle_period_seconds: float = 1.0
    node_order: str = "binpack"
    resource_weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    disabled_plugins: frozenset[str] = frozenset()
    """Plugins turned off (``enabled: false``), built-in or external."""
    plugins: tuple[PluginSetting, ...] = ()
    """Every entry of ``plugins:``, validated (external plugins are enabled by being listed)."""
    gpu_device_classes: frozenset[str] = frozenset()
    preemption_budget: int = 1000
    """Victim-set simulations per cycle, over reclaim, preempt and consolidate together."""
    preemption_nodes_per_task: int = 8
    """Nodes on which one pending pod's victims are simulated (best estimate first)."""

    def enabled(self, plugin: str) -> bool:
        """Whether ``plugin`` runs: a built-in unless turned off, an external one if listed and on."""
        if plugin in self.disabled_plugins:
            return False
        return plugin in BUILTINS or any(s.name == plugin and s.enabled for s in self.plugins)

    def schedules(self, scheduler_name: str | None) -> bool:
        """Whether pods with this ``spec.schedulerName`` are ours (no names: all of them)."""
        return not self.scheduler_names or (scheduler_name or "default-scheduler") in self.scheduler_names

    @staticmethod
    def embedded() -> SchedulerConfig:
        """Defaults for ``drasched simulate``: no other scheduler runs there, so every pod is ours."""
        return replace(SchedulerConfig(), scheduler_names=())


def parse_duration(value: Any) -> float:
    """``500ms``, ``1s``, ``2m``, ``1h`` (or a bare number of seconds) -> seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    m = _DURATION.match(str(value).strip())
    if not m:
        raise ValueError(f"{value!r} is not a duration (e.g. 500ms, 1s, 2m)")
    return float(m.group(1)) * _DURATION_SCALE[m.group(2)]


def _string_list(raw: Any, where: str, errors: list[str]) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        errors.append(f"{where}: must be a list of non-empty strings")
        return ()
    return tuple(raw)


def _parse_plugins(raw: Any, errors: list[str], modules: Collection[str] | None) -> tuple[
        tuple[PluginSetting, ...], dict[str, float] | None]:
    settings = parse_plugins(raw, errors, modules)
    weights = None
    for s in settings:
        if "resourceWeights" in s.args:
            weights = {str(k): float(v) for k, v in s.args["resourceWeights"].items()}
    return settings, weights


def config_from_dict(raw: Any, base: SchedulerConfig | None = None,
                     modules: Collection[str] | None = None) -> SchedulerConfig:
    """Validate a decoded YAML document; raise ``ConfigError`` listing every problem.

    Keys the document leaves out keep their value in ``base`` (the defaults if ``None``).
    ``modules``: the external plugin modules it may load (``None``: any).
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError("config: the document must be a map")
    errors: list[str] = []
    for key in raw:
        if key not in _TOP_KEYS:
            errors.append(f"{key}: unknown key (known: {', '.join(_TOP_KEYS)})")
    if raw.get("kind", "SchedulerConfiguration") != "SchedulerConfiguration":
        errors.append(f"kind: must be SchedulerConfiguration, got {raw.get('kind')!r}")
    cfg = base or SchedulerConfig()
    changes: dict[str, Any] = {}
    if "schedulerNames" in raw:
        names = raw["schedulerNames"]
        changes["scheduler_names"] = () if names == [] else _string_list(names, "schedulerNames", errors)
    if "actions" in raw:
        actions = _string_list(raw["actions"], "actions", errors)
        for a in actions:
            if a not in ACTIONS:
                errors.append(f"actions: unknown action {a!r} (known: {', '.join(ACTIONS)})")
        if not actions and isinstance(raw["actions"], list):
            errors.append("actions: at least one action is needed")
        changes["actions"] = actions
    if "cyclePeriod" in raw:
        try:
            period = parse_duration(raw["cyclePeriod"])
            if period <= 0:
                errors.append("cyclePeriod: must be positive")
            changes["cycle_period_seconds"] = period
        except ValueError as exc:
            errors.append(f"cyclePeriod: {exc}")
    if "nodeOrder" in raw:
        if raw["nodeOrder"] not in STRATEGIES:
            errors.append(f"nodeOrder: must be one of {', '.join(STRATEGIES)}, got {raw['nodeOrder']!r}")
        changes["node_order"] = raw["nodeOrder"]
    if "plugins" in raw:
        settings, weights = _parse_plugins(raw["plugins"], errors, modules)
        changes["plugins"] = settings
        changes["disabled_plugins"] = frozenset(s.name for s in settings if not s.enabled)
        if weights is not None:
            changes["resource_weights"] = weights
    if "gpu" in raw:
        gpu = raw["gpu"]
        if not isinstance(gpu, dict):
            errors.append("gpu: must be a map with deviceClasses")
        else:
            for key in sorted(set(gpu) - {"deviceClasses"}):
                errors.append(f"gpu.{key}: unknown key (known: deviceClasses)")
            if "deviceClasses" in gpu:
                changes["gpu_device_classes"] = frozenset(
                    _string_list(gpu["deviceClasses"], "gpu.deviceClasses", errors))
    if "preemption" in raw:
        changes.update(_parse_preemption(raw["preemption"], errors))
    if errors:
        raise ConfigError("invalid scheduler configuration:\n  " + "\n  ".join(errors))
    return replace(cfg, **changes)


_PREEMPTION_KEYS = {"budget": "preemption_budget", "nodesPerTask": "preemption_nodes_per_task"}


def _parse_preemption(raw: Any, errors: list[str]) -> dict[str, int]:
    if not isinstance(raw, dict):
        errors.append("preemption: must be a map with budget, nodesPerTask")
        return {}
    out: dict[str, int] = {}
    for key in sorted(set(raw) - set(_PREEMPTION_KEYS)):
        errors.append(f"preemption.{key}: unknown key (known: {', '.join(_PREEMPTION_KEYS)})")
    for key, attr in _PREEMPTION_KEYS.items():
        if key not in raw:
            continue
        v = raw[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            errors.append(f"preemption.{key}: must be an integer >= 1, got {v!r}")
        else:
            out[attr] = v
    return out


def config_from_yaml(text: str, base: SchedulerConfig | None = None, where: str = "config",
                     modules: Collection[str] | None = None) -> SchedulerConfig:
    """Parse and validate YAML text (a file's or a ConfigMap's)."""
    try:
        raw = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError) as exc:  # a bad date is a ValueError
        raise ConfigError(f"{where}: not valid YAML: {exc}") from None
    try:
        return config_from_dict(raw, base, modules)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def load_config(path: str | Path | None) -> SchedulerConfig:
    """Read and validate a config file; ``None`` gives the defaults."""
    if path is None:
        return SchedulerConfig()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read scheduler configuration {path}: {exc.strerror}") from None
    return config_from_yaml(text, where=str(path))
