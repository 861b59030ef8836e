"""Evaluations per second of a typical DRA selector: compiled, hand-written, celpy-interpreted.

Not a test. Run: ``python tests/bench/bench_cel.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import celpy
import celpy.celtypes as ct

from drasched.cel import DeviceView, compile_selector
from drasched.quantity import Quantity

EXPR = (
    'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "a100" && '
    'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'
)


def rate(fn: Callable[[], Any], seconds: float = 1.0) -> float:
    n = 0
    batch = 100
    start = time.perf_counter()
    while True:
        for _ in range(batch):
            fn()
        n += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n / elapsed
        batch = min(batch * 2, 100_000)


def main() -> None:
    dev = DeviceView(
        "gpu.example.com",
        {"gpu.example.com": {"model": "a100", "cores": 108}},
        {"gpu.example.com": {"memory": Quantity("80Gi")}},
    )
    sel = compile_selector(EXPR)
    assert sel.evaluate(dev)

    q40 = Quantity("40Gi")
    empty: dict[str, Any] = {}

    def hand(d: DeviceView) -> bool:
        return (
            d.driver == "gpu.example.com"
            and d.attributes.get("gpu.example.com", empty)["model"] == "a100"
            and d.capacity.get("gpu.example.com", empty)["memory"].compare(q40) >= 0
        )

    assert hand(dev)

    # celpy: quantities as byte counts, quantity() and compareTo as custom functions
    def c_quantity(s: ct.StringType) -> ct.IntType:
        return ct.IntType(Quantity(str(s)).value_int())

    def c_compare(a: ct.IntType, b: ct.IntType) -> ct.IntType:
        return ct.IntType((a > b) - (a < b))

    env = celpy.Environment()
    prog = env.program(env.compile(EXPR), functions={"quantity": c_quantity, "compareTo": c_compare})
    activation = {
        "device": ct.MapType(
            {
                ct.StringType("driver"): ct.StringType(dev.driver),
                ct.StringType("attributes"): ct.MapType(
                    {ct.StringType("gpu.example.com"): ct.MapType({ct.StringType("model"): ct.StringType("a100")})}
                ),
                ct.StringType("capacity"): ct.MapType(
                    {
                        ct.StringType("gpu.example.com"): ct.MapType(
                            {ct.StringType("memory"): ct.IntType(Quantity("80Gi").value_int())}
                        )
                    }
                ),
            }
        )
    }
    assert bool(prog.evaluate(activation))

    compiled = rate(lambda: sel.evaluate(dev))
    handwritten = rate(lambda: hand(dev))
    interpreted = rate(lambda: prog.evaluate(activation), seconds=2.0)
    start = time.perf_counter()
    for i in range(200):
        compile_selector(EXPR + f" && {i} >= 0")
    compile_ms = (time.perf_counter() - start) / 200 * 1000

    print(f"selector: {EXPR}")
    print(f"compiled (drasched.cel):  {compiled:12,.0f} evals/s")
    print(f"hand-written predicate:   {handwritten:12,.0f} evals/s  ({compiled / handwritten:.2f}x of hand-written)")
    print(f"celpy interpreted:        {interpreted:12,.0f} evals/s  ({compiled / interpreted:.0f}x slower than ours)")
    print(f"compile (uncached):       {compile_ms:12.2f} ms/expression")


if __name__ == "__main__":
    main()
