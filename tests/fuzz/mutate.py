"""Broken manifests for the fuzz target: the shipped examples and scenarios, mutated.

One mutation picks a place in one object (any mapping key or list item, found by walking
the document) and breaks it the way a new user's file is broken: a value of the wrong JSON
type, a deleted field, a huge or negative number, a very long string, a quantity of
thousands of digits, deep nesting, or a duplicated list item; or changes it plausibly
(another small number, another name from the same object, a shorter list) so that many
inputs pass validation and exercise the scheduler, allocator and controllers. Everything is drawn from a
``random.Random`` so that one integer seed names one input exactly.
"""

from __future__ import annotations

import copy
import io
import json
import random
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from drasched.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
SCENARIO_API = "test.drasched.io/v1"

Obj = dict[str, Any]
Slot = tuple[Any, Any]  # (container, key or index)


@cache
def corpus() -> tuple[tuple[str, tuple[Obj, ...]], ...]:
    """Every example and scenario file: (relative path, its object documents)."""
    files = sorted([*ROOT.joinpath("examples").rglob("*.yaml"), *ROOT.joinpath("tests", "scenarios").rglob("*.yaml")])
    out = []
    for f in files:
        docs = tuple(d for d in yaml.safe_load_all(f.read_text(encoding="utf-8"))
                     if isinstance(d, dict) and d.get("apiVersion") != SCENARIO_API)
        if docs:
            out.append((str(f.relative_to(ROOT)), docs))
    return tuple(out)


def _slots(doc: Any) -> list[Slot]:
    """Every (container, key) in ``doc``, parents before children."""
    slots: list[Slot] = []
    stack = [doc]
    while stack:
        cur = stack.pop()
        keys = list(cur) if isinstance(cur, dict) else range(len(cur)) if isinstance(cur, list) else []
        for k in keys:
            slots.append((cur, k))
            if isinstance(cur[k], dict | list):
                stack.append(cur[k])
    return slots


DEEP_2000, DEEP_5000 = "__deep_2000__", "__deep_5000__"
"""Placeholders written out as 2,000 or 5,000 nested flow sequences (too deep for the writers)."""


def _nest(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


VALUES: tuple[Callable[[random.Random, Any], Any], ...] = (
    lambda r, v: "a string",
    lambda r, v: r.choice([0, 1, -1, 7]),
    lambda r, v: r.choice([True, False]),
    lambda r, v: [v],
    lambda r, v: ["a"],
    lambda r, v: {"a": v},
    lambda r, v: None,
    lambda r, v: 1.5,
    lambda r, v: r.choice([10**30, -(10**30), 2**63, 2**63 - 1, -(2**63) - 1, 10**20]),
    lambda r, v: "x" * r.choice([64, 254, 10_000]),
    lambda r, v: r.choice(["9" * 5000, "9" * 5000 + "Gi", "1e" + "9" * 5000, "0." + "1" * 5000, "-1", "80 Gi"]),
    lambda r, v: _nest(v, r.choice([50, 200])),
    lambda r, v: r.choice([DEEP_2000, DEEP_5000]),
    lambda r, v: r.choice(["9999999999999h", "-5m", "x.y", "count=1000000", "computeCapability=x.y", ""]),
)


def _plausible(rnd: random.Random, value: Any, doc: Obj) -> Any:
    """A change of the same type, so that the input often passes validation and runs deeper:
    another small number, another string from the same object, a shorter list."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rnd.choice([0, 1, 2, 3, 8, 100, value + 1, value - 1])
    if isinstance(value, str):
        strings = [v for c, k in _slots(doc) if isinstance(v := c[k], str)]
        return rnd.choice(strings) if strings else value
    if isinstance(value, list):
        return value[: rnd.randrange(len(value) + 1)]
    return value


def mutate(docs: tuple[Obj, ...], rnd: random.Random, count: int) -> list[Obj]:
    """``count`` random breakages of a deep copy of ``docs``."""
    out = copy.deepcopy(list(docs))
    for _ in range(count):
        doc = rnd.choice(out)
        slots = _slots(doc)
        if not slots:
            continue
        container, key = rnd.choice(slots)
        action = rnd.random()
        if action < 0.15 and isinstance(container, dict):
            del container[key]
        elif action < 0.2 and isinstance(container, list):
            container.append(copy.deepcopy(container[key]))
        elif action < 0.45:
            container[key] = _plausible(rnd, container[key], doc)
        else:
            container[key] = rnd.choice(VALUES)(rnd, container[key])
    return out


@dataclass
class Outcome:
    code: int
    stderr: str
    source: str
    origin: str
    """The example or scenario file the input was made from."""


def write(docs: list[Obj], path: Path) -> None:
    """YAML (JSON, which YAML reads too, when the YAML writer cannot nest that deep); the
    deep-nesting placeholders become nested flow sequences in the text."""
    try:
        text = yaml.safe_dump_all(docs, sort_keys=False, width=1 << 20)
    except RecursionError:
        text = json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    for marker, depth in ((DEEP_2000, 2000), (DEEP_5000, 5000)):
        text = text.replace(marker, "[" * depth + "1" + "]" * depth)
    path.write_text(text, encoding="utf-8")


def simulate(seed: int, tmp: Path) -> Outcome:
    """Mutate the corpus file the seed picks and run ``drasched simulate`` on it in process."""
    rnd = random.Random(seed)
    name, docs = rnd.choice(corpus())
    broken = mutate(docs, rnd, rnd.choice([1, 1, 2, 3]))
    src = tmp / f"fuzz-{seed}.yaml"
    write(broken, src)
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        code = cli_main(["simulate", str(src), "-o", str(tmp / "out.yaml"), "-q"])
    return Outcome(code, err.getvalue(), str(src), name)
