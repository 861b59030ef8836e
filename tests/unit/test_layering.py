"""The layers of docs/architecture.md hold: no module imports a layer above its own.

The contract is import-linter's (pyproject.toml, ``[tool.importlinter]``); scripts/test.sh
runs ``lint-imports`` too. These tests make a broken layer fail the test suite, and make a
new top-level package fail until it is given a layer.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import drasched

ROOT = Path(__file__).resolve().parents[2]


def _layers() -> list[list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [[name.strip() for name in layer.replace(":", "|").split("|")] for layer in contract["layers"]]


def test_every_top_level_package_and_module_has_a_layer() -> None:
    placed = {name for layer in _layers() for name in layer}
    present = {f"drasched.{m.name}" for m in pkgutil.iter_modules(drasched.__path__)}
    assert present - placed == set(), "give each new package a layer in pyproject.toml and docs/architecture.md"
    assert placed - present == set(), "a layer names a package that no longer exists"


def test_quantity_is_the_lowest_layer_then_cel_then_api() -> None:
    """api validates device selectors by compiling them (as the API server does on write), so
    it sits on cel; both use Quantity, the bottom."""
    layers = _layers()
    assert layers[-3:] == [["drasched.api"], ["drasched.cel"], ["drasched.quantity"]]


def test_no_module_imports_a_layer_above_it() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint_imports)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 1 kept, 0 broken." in done.stdout
