"""Every scenario file under tests/scenarios/ runs through ``drasched simulate`` and is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.runner import check_expectations, load_scenario, run_scenario

HERE = Path(__file__).parent
FILES = sorted(p for p in HERE.rglob("*.yaml"))


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(HERE)) for p in FILES])
def test_scenario(path: Path, tmp_path: Path) -> None:
    scn = load_scenario(path)
    code, objects, stderr = run_scenario(scn, tmp_path)
    assert code == scn.exit_code, f"{scn.description}\nexit {code}\n{stderr}"
    missing = [f for f in scn.stderr_contains if f not in stderr]
    assert not missing, f"{scn.description}\nstderr lacks {missing}:\n{stderr}"
    problems = check_expectations(scn, objects)
    assert not problems, f"{scn.description}\n" + "\n".join(problems) + f"\n--- stderr ---\n{stderr}"
