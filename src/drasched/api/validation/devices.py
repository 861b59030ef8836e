"""A ResourceSlice device's advanced fields (pkg/apis/resource/validation, v1.37.2): binding
conditions, counter names and consumable capacity's request policy."""

from __future__ import annotations

from typing import Any

from drasched.api.errors import Cause
from drasched.api.resource import CounterSet, DeviceCounterConsumption
from drasched.api.validation.gojson import go_ordered
from drasched.api.validation.names import (
    bad,
    check_label,
    check_qualified_name,
    duplicate,
    forbidden,
    required,
    too_many,
)
from drasched.quantity import Quantity, QuantityError

Obj = dict[str, Any]

BINDING_CONDITIONS_MAX = 4
COUNTERS_PER_SET_MAX = 32
COUNTER_CONSUMPTIONS_PER_DEVICE_MAX = 2


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _nil_or_list(value: Any) -> str:
    """How Go prints a nil or empty []string as a field value."""
    return "null" if value is None else "[]"


def check_binding_conditions(path: str, dev: Obj) -> list[Cause]:
    """``validateDeviceBindingParameters``: at most 4 each, qualified names, no overlap, both or none."""
    conditions, failures = _strings(dev.get("bindingConditions")), _strings(dev.get("bindingFailureConditions"))
    causes: list[Cause] = []
    for key, values in (("bindingConditions", conditions), ("bindingFailureConditions", failures)):
        if len(values) > BINDING_CONDITIONS_MAX:
            causes.append(too_many(f"{path}.{key}", len(values), BINDING_CONDITIONS_MAX))
        else:
            for i, value in enumerate(values):
                causes += check_qualified_name(f"{path}.{key}[{i}]", value)
        seen: set[str] = set()
        for i, value in enumerate(values):
            if value in seen:
                causes.append(duplicate(f"{path}.{key}[{i}]", value))
            seen.add(value)
    for i, value in enumerate(failures):
        if value in conditions:
            causes.append(bad(f"{path}.bindingFailureConditions[{i}]", value,
                              "bindingFailureConditions must not overlap with bindingConditions"))
    if not conditions and failures:
        causes.append(Cause(f"{path}.bindingConditions",
                            f"Invalid value: {_nil_or_list(dev.get('bindingConditions'))}: "
                            "bindingConditions are required to use bindingFailureConditions"))
    if not failures and conditions:
        causes.append(Cause(f"{path}.bindingFailureConditions",
                            f"Invalid value: {_nil_or_list(dev.get('bindingFailureConditions'))}: "
                            "bindingFailureConditions are required to use bindingConditions"))
    return causes


def check_counter_names(path: str, counters: Any) -> list[Cause]:
    """Counter names are DNS labels; at most 32 in one map."""
    if not isinstance(counters, dict) or not counters:
        return [required(path)]
    if len(counters) > COUNTERS_PER_SET_MAX:
        return [too_many(path, len(counters), COUNTERS_PER_SET_MAX)]
    return [c for name in sorted(counters) for c in check_label(path, name)]


def check_shared_counters(spec: Obj) -> list[Cause]:
    causes: list[Cause] = []
    sets = spec.get("sharedCounters")
    seen: set[Any] = set()
    for i, counter_set in enumerate(sets if isinstance(sets, list) else []):
        if isinstance(counter_set, dict):
            path = f"spec.sharedCounters[{i}]"
            causes += check_label(f"{path}.name", counter_set.get("name"))
            causes += check_counter_names(f"{path}.counters", counter_set.get("counters"))
            # keyed by name, every repeat at its own index; 1.37 (+k8s:unique=map) shows the whole set
            if counter_set.get("name") in seen:
                causes.append(duplicate(path, go_ordered(counter_set, CounterSet)))
            seen.add(counter_set.get("name"))
    return causes


def check_counter_consumption(path: str, dev: Obj) -> list[Cause]:
    consumes = dev.get("consumesCounters")
    if not isinstance(consumes, list):
        return []
    if len(consumes) > COUNTER_CONSUMPTIONS_PER_DEVICE_MAX:
        return [too_many(f"{path}.consumesCounters", len(consumes), COUNTER_CONSUMPTIONS_PER_DEVICE_MAX)]
    causes: list[Cause] = []
    seen: set[Any] = set()
    for i, use in enumerate(consumes):
        if isinstance(use, dict):
            cpath = f"{path}.consumesCounters[{i}]"
            causes += check_label(f"{cpath}.counterSet", use.get("counterSet"))
            causes += check_counter_names(f"{cpath}.counters", use.get("counters"))
            # keyed by counterSet, once per device; 1.37 (+k8s:unique=map) shows the whole entry
            if use.get("counterSet") in seen:
                causes.append(duplicate(cpath, go_ordered(use, DeviceCounterConsumption)))
            seen.add(use.get("counterSet"))
    return causes


def _q(value: Any) -> Quantity | None:
    """A quantity as decoded (a JSON number is one too: ``1.5`` is ``1500m``); None when absent."""
    try:
        return Quantity.parse(value) if isinstance(value, str | int | float) and not isinstance(value, bool) else None
    except QuantityError:
        return None


def _check_valid_values(path: str, default: Quantity, capacity: Quantity, values: list[Any]) -> list[Cause]:
    quantities = [_q(v) for v in values]
    causes: list[Cause] = []
    for i in range(len(quantities) - 1):
        a, b = quantities[i], quantities[i + 1]
        if a is not None and b is not None and a > b:
            causes.append(bad(f"{path}[{i + 1}]", str(b), "values must be sorted in ascending order"))
    for i, q in enumerate(quantities):
        if q is not None and q > capacity:
            causes.append(bad(f"{path}[{i}]", str(q), f"option is larger than capacity value: {capacity}"))
    if not any(q is not None and q == default for q in quantities):
        causes.append(bad(path, str(default), "default value is not valid according to the requestPolicy"))
    return causes


def _check_valid_range(path: str, default: Quantity, capacity: Quantity, valid_range: Obj) -> list[Cause]:
    low, high, step = _q(valid_range.get("min")), _q(valid_range.get("max")), _q(valid_range.get("step"))
    if low is None:
        return [Cause(f"{path}.min", "Required value: required when validRange is defined", "FieldValueRequired")]
    causes: list[Cause] = []
    if low > capacity:
        causes.append(bad(f"{path}.min", str(low), f"min is larger than capacity value: {capacity}"))
    if default < low:  # 1.37 names .default (1.36: .min)
        causes.append(bad(f"{path}.default", str(default), f"default is less than min: {low}"))
    if high is not None:
        if low > high:
            causes.append(bad(f"{path}.max", str(low), f"min is larger than max: {high}"))
        if high > capacity:
            causes.append(bad(f"{path}.max", str(high), f"max is larger than capacity value: {capacity}"))
        if default > high:  # 1.37 names .default (1.36: .max)
            causes.append(bad(f"{path}.default", str(default), f"default is more than max: {high}"))
    if step is None:
        return causes
    if step.sign() <= 0:
        return [*causes, bad(f"{path}.step", str(step), "must be greater than zero")]
    one_step = low + step
    if one_step > capacity:
        causes.append(bad(f"{path}.step", str(step), f"one step {one_step} is larger than capacity value: {capacity}"))
    # 1.37 (DRAFractionalCapacityRange off): the step check reads Value(), which only holds in
    # [0, MaxInt64]; a bound outside it is refused instead
    unsafe = [bad(f"{path}.{name}", str(q), msg) for name, q in (("default", default), ("min", low), ("max", high),
                                                                  ("step", step))
              if q is not None for msg in _int64_range_errors(q)]
    if unsafe:
        return causes + unsafe
    for value in (default, high):
        if value is not None and (value.value_int() - low.value_int()) % step.value_int() != 0:
            causes.append(bad(f"{path}.step", str(value),
                              f"value is not a multiple of a given step ({step}) from ({low})"))
    return causes


def _int64_range_errors(q: Quantity) -> list[str]:
    """``validateInt64Range``: a bound the whole-number step arithmetic can read."""
    if q.sign() < 0:
        return ["must be greater than or equal to 0"]
    if q > Quantity.from_int(2**63 - 1):
        return ["must not be larger than 9223372036854775807"]
    return []


def check_capacity_policy(path: str, capacity: Any, multi: bool) -> list[Cause]:
    """A capacity's ``requestPolicy``: only on multi-allocatable devices, one kind, within the value."""
    policy = capacity.get("requestPolicy") if isinstance(capacity, dict) else None
    if not isinstance(policy, dict):
        return []
    ppath = f"{path}.requestPolicy"
    if not multi:
        return [forbidden(ppath, "allowMultipleAllocations must be true")]
    values, valid_range = policy.get("validValues"), policy.get("validRange")
    if values and valid_range is not None:
        return [forbidden(ppath, 'exactly one policy can be specified, cannot specify "validValues" and '
                                 '"validRange" at the same time')]
    # an absent value is Go's zero Quantity: every policy bound is then larger than it
    value, default = _q(capacity.get("value")) or Quantity.parse("0"), _q(policy.get("default"))
    if not (values or isinstance(valid_range, dict)):
        return []
    which = "validValues" if values else "validRange"
    if default is None:
        return [Cause(f"{ppath}.default", f"Required value: required when {which} is defined", "FieldValueRequired")]
    if values:
        return _check_valid_values(f"{ppath}.validValues", default, value, values)
    assert isinstance(valid_range, dict)
    return _check_valid_range(f"{ppath}.validRange", default, value, valid_range)
