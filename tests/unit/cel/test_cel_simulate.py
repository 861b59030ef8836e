"""``drasched simulate`` refuses a manifest whose device selectors the API server refuses:
exit 2, nothing simulated, the file, document, object and field named."""

from __future__ import annotations

from pathlib import Path

import pytest

from drasched.cli import main

FIVE_HUNDRED = "[" + ",".join(str(i) for i in range(500)) + "]"

CLASS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu.example.com}}
spec:
  selectors:
  - cel: {{expression: '{expression}'}}
"""

CLAIM = """\
apiVersion: v1
kind: Namespace
metadata: {{name: team}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: train, namespace: team}}
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - name: big
        deviceClassName: gpu.example.com
        selectors:
        - cel: {{expression: '{expression}'}}
"""


@pytest.mark.parametrize(
    ("template", "expression", "expected"),
    [
        (CLASS, "device.driver == 1",
         "document 0: DeviceClass gpu.example.com: spec.selectors[0].cel.expression: Invalid value: "
         "\"device.driver == 1\": compilation failed: ERROR: <input>:1:15: found no matching overload"),
        (CLASS, "device.driver",
         "document 0: DeviceClass gpu.example.com: spec.selectors[0].cel.expression: Invalid value: "
         "\"device.driver\": must evaluate to bool or the unknown type, not string"),
        (CLAIM, 'device.driver.matches("(?<=a)b")',
         "document 1: ResourceClaim team/train: spec.devices.requests[0].firstAvailable[0].selectors[0]"
         ".cel.expression: Invalid value"),
        (CLAIM, f"{FIVE_HUNDRED}.map(x, {FIVE_HUNDRED}.map(y, {FIVE_HUNDRED})).size() > 0",
         "document 1: ResourceClaim team/train: spec.devices.requests[0].firstAvailable[0].selectors[0]"
         ".cel.expression: Forbidden: too complex, exceeds cost limit"),
    ],
)
def test_selector_the_api_server_refuses_stops_simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], template: str, expression: str, expected: str
) -> None:
    src = tmp_path / "in.yaml"
    src.write_text(template.format(expression=expression))
    out = tmp_path / "out.yaml"
    assert main(["simulate", str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{src}: {expected}" in err
    assert not out.exists()
