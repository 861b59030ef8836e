"""Plugin name -> factory, and the ``plugins:`` section of the configuration validated against it.

A built-in plugin is one module plus one line in :data:`BUILTINS`. A plugin from outside
the package is named in the configuration with ``module:`` (a dotted module on the Python
path, or a ``.py`` file, relative to the working directory) that defines ``PLUGIN``, a
:class:`PluginSpec`. Every setting is checked before a cycle runs: an unknown plugin name,
an unknown argument, an argument of the wrong type, or ``weight`` on a plugin that does not
score is refused with the key named.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from drasched.scheduler.framework.api import Plugin
from drasched.scheduler.plugins.dra import DynamicResources, ExtendedResources
from drasched.scheduler.plugins.fairshare import FairShare, GangPriority
from drasched.scheduler.plugins.fit import PodCount, ResourceFit
from drasched.scheduler.plugins.implicitgang import ImplicitGangGate
from drasched.scheduler.plugins.interpod import InterPodAffinity
from drasched.scheduler.plugins.nodeorder import NodeOrder
from drasched.scheduler.plugins.predicates import NodeAffinity, NodeSelector, NodeUnschedulable, TaintToleration
from drasched.scheduler.plugins.spread import PodTopologySpread
from drasched.scheduler.plugins.topology import Topology


@dataclass(frozen=True)
class Arg:
    """One plugin argument: a test of its value and the words for what it must be.

    With ``values`` the argument is a map from string keys to values ``values`` accepts,
    and a bad entry is reported under its own key.
    """

    valid: Callable[[Any], bool]
    expected: str
    values: Arg | None = None

    def errors(self, value: Any, where: str) -> list[str]:
        if self.values is None:
            return [] if self.valid(value) else [f"{where}: must be {self.expected}, got {value!r}"]
        if not isinstance(value, dict):
            return [f"{where}: must be {self.expected}, got {value!r}"]
        out: list[str] = []
        for key, item in value.items():
            if not isinstance(key, str) or not key:
                out.append(f"{where}: keys must be non-empty strings, got {key!r}")
            else:
                out += self.values.errors(item, f"{where}.{key}")
        return out


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and v >= 0


NUMBER = Arg(_number, "a number >= 0")
STRING = Arg(lambda v: isinstance(v, str) and bool(v), "a non-empty string")
BOOL = Arg(lambda v: isinstance(v, bool), "true or false")
STRINGS = Arg(lambda v: isinstance(v, list) and all(isinstance(x, str) and x for x in v),
              "a list of non-empty strings")
WEIGHTS = Arg(lambda v: isinstance(v, dict), "a map from resource name to a number >= 0", NUMBER)


@dataclass(frozen=True)
class PluginContext:
    """What a factory gets: the configured name, the validated arguments, the weight, global settings."""

    name: str
    args: Mapping[str, Any]
    weight: float = 1.0
    node_order: str = "binpack"


@dataclass(frozen=True)
class PluginSpec:
    """How to build one plugin from its configuration."""

    factory: Callable[[PluginContext], Plugin]
    args: Mapping[str, Arg] = field(default_factory=lambda: MappingProxyType({}))
    scores: bool = False
    """Whether it is a scorer (only then does ``weight`` mean something)."""
    weight: float = 1.0
    """The weight of its scores when the configuration gives none."""


BUILTINS: Mapping[str, PluginSpec] = MappingProxyType({
    "implicitGangGate": PluginSpec(lambda c: ImplicitGangGate()),
    "nodeUnschedulable": PluginSpec(lambda c: NodeUnschedulable()),
    "taintToleration": PluginSpec(lambda c: TaintToleration(c.weight), scores=True, weight=3.0),
    "nodeAffinity": PluginSpec(lambda c: NodeAffinity(c.weight), scores=True, weight=2.0),
    "nodeSelector": PluginSpec(lambda c: NodeSelector()),
    "podCount": PluginSpec(lambda c: PodCount()),
    "resourceFit": PluginSpec(lambda c: ResourceFit()),
    "extendedResources": PluginSpec(lambda c: ExtendedResources()),
    "podTopologySpread": PluginSpec(lambda c: PodTopologySpread(c.weight), scores=True, weight=2.0),
    "interPodAffinity": PluginSpec(lambda c: InterPodAffinity(c.weight), scores=True, weight=2.0),
    "dra": PluginSpec(lambda c: DynamicResources()),
    "nodeOrder": PluginSpec(lambda c: NodeOrder(c.node_order, c.weight), {"resourceWeights": WEIGHTS}, scores=True),
    "topology": PluginSpec(lambda c: Topology()),
    "fairShare": PluginSpec(lambda c: FairShare()),
    "gangPriority": PluginSpec(lambda c: GangPriority()),
})
"""Built-in plugins, all enabled by default, in the order their extension points run them.

The filters run in upstream's default order (``pkg/scheduler/apis/config/v1/default_plugins.go``:
NodeName, NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, ...,
PodTopologySpread, InterPodAffinity, then DynamicResources), and a node's reason is the first
failing filter's, so a tainted node the pod's node affinity or ``nodeSelector`` (both upstream's
NodeAffinity) also rules out reports the taint, as upstream does.

Default weights are upstream's (``pkg/scheduler/apis/config/v1/default_plugins.go``):
NodeAffinity 2, TaintToleration 3, PodTopologySpread 2, InterPodAffinity 2; ``nodeOrder``
(upstream NodeResourcesFit) 1."""

_SETTING_KEYS = ("enabled", "weight", "module")


@dataclass(frozen=True)
class PluginSetting:
    """One validated entry of ``plugins:``."""

    name: str
    enabled: bool = True
    weight: float = 1.0
    module: str | None = None
    args: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


class PluginLoadError(ValueError):
    """An external plugin module that cannot be used."""


_loaded: dict[str, PluginSpec] = {}


def load_spec(module: str) -> PluginSpec:
    """``PLUGIN`` of a dotted module or a ``.py`` file (relative to the working directory)."""
    hit = _loaded.get(module)
    if hit is not None:
        return hit
    try:
        if module.endswith(".py") or "/" in module:
            path = Path(module).resolve()
            name = "drasched_plugin_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None or not path.is_file():
                raise PluginLoadError(f"no Python file at {path}")
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod  # dataclasses and pickling look the module up by name
            try:
                spec.loader.exec_module(mod)
            except BaseException:
                del sys.modules[name]
                raise
        else:
            mod = importlib.import_module(module)
    except PluginLoadError:
        raise
    except Exception as exc:  # any import failure is the configuration's problem, reported as such
        raise PluginLoadError(f"cannot import {module}: {type(exc).__name__}: {exc}") from None
    found = getattr(mod, "PLUGIN", None)
    if not isinstance(found, PluginSpec):
        raise PluginLoadError(f"{module} defines no PLUGIN = PluginSpec(...)")
    _loaded[module] = found
    return found


def spec_of(setting: PluginSetting) -> PluginSpec:
    if setting.module is not None:
        return load_spec(setting.module)
    return BUILTINS[setting.name]


def parse_plugins(raw: Any, errors: list[str], modules: Collection[str] | None = None) -> tuple[PluginSetting, ...]:
    """Validate ``plugins:`` (name -> settings); every problem is appended to ``errors``.

    ``modules``: the external modules that may be loaded (``None``: any). Importing a module
    runs its code, so ``drasched serve`` lets its ConfigMap name only the modules its
    configuration file already names.
    """
    if not isinstance(raw, dict):
        errors.append("plugins: must be a map from plugin name to its settings")
        return ()
    out: list[PluginSetting] = []
    for name, entry in raw.items():
        where = f"plugins.{name}"
        entry = {} if entry is None else entry
        if not isinstance(name, str) or not name:
            errors.append(f"{where}: a plugin name must be a non-empty string")
            continue
        if not isinstance(entry, dict):
            errors.append(f"{where}: must be a map of settings")
            continue
        setting = _parse_one(name, entry, where, errors, modules)
        if setting is not None:
            out.append(setting)
    return tuple(out)


def _parse_one(name: str, entry: dict[Any, Any], where: str, errors: list[str],
               modules: Collection[str] | None) -> PluginSetting | None:
    module = entry.get("module")
    if module is not None and not STRING.valid(module):
        errors.append(f"{where}.module: must be {STRING.expected}, got {module!r}")
        return None
    if module is None and name not in BUILTINS:
        errors.append(f"{where}: unknown plugin (built in: {', '.join(BUILTINS)}; "
                      "name a module: to load one from outside)")
        return None
    if module is not None and name in BUILTINS:
        errors.append(f"{where}.module: {name} is a built-in plugin name; give the external plugin another name")
        return None
    if module is not None and modules is not None and module not in modules:
        errors.append(f"{where}.module: {module} is not among the modules the configuration file names "
                      f"({', '.join(sorted(modules)) or 'none'}); only those may be loaded from here")
        return None
    setting = PluginSetting(name, module=module)
    try:
        spec = spec_of(setting)
    except PluginLoadError as exc:
        errors.append(f"{where}.module: {exc}")
        return None
    before = len(errors)
    enabled = entry.get("enabled", True)
    if not BOOL.valid(enabled):
        errors.append(f"{where}.enabled: must be {BOOL.expected}, got {enabled!r}")
    weight = entry.get("weight", spec.weight)
    if "weight" in entry and not spec.scores:
        errors.append(f"{where}.weight: {name} does not score nodes, a weight means nothing to it")
    elif not NUMBER.valid(weight):
        errors.append(f"{where}.weight: must be {NUMBER.expected}, got {weight!r}")
    args: dict[str, Any] = {}
    for key, value in entry.items():
        if key in _SETTING_KEYS:
            continue
        arg = spec.args.get(key) if isinstance(key, str) else None
        if arg is None:
            known = ", ".join([*_SETTING_KEYS[:2 if spec.scores else 1], *spec.args])
            errors.append(f"{where}.{key}: unknown argument (known: {known})")
            continue
        problems = arg.errors(value, f"{where}.{key}")
        errors += problems
        if not problems:
            args[key] = value
    if len(errors) > before:
        return None
    setting = PluginSetting(name, bool(enabled), float(weight), module, MappingProxyType(args))
    try:
        build(setting, "binpack")  # a factory that refuses its arguments is a configuration error
    except Exception as exc:  # an outside factory may raise anything
        errors.append(f"{where}: {type(exc).__name__}: {exc}")
        return None
    return setting


def build(setting: PluginSetting, node_order: str) -> Plugin:
    """The plugin a setting describes, checked to implement at least the base protocol."""
    plugin = spec_of(setting).factory(PluginContext(setting.name, setting.args, setting.weight, node_order))
    if not isinstance(plugin, Plugin):
        raise PluginLoadError(f"the factory of {setting.name} built {type(plugin).__name__}, "
                              "which has no name or events()")
    return plugin
