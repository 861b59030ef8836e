"""The HTML report of ``simulate``, opened in a real headless Chromium (Debian's ``chromium``,
driven by playwright through its executable path: no browser download).

The run: the migration example with more research pods than its GPUs hold, a pod that fits
no node, and every pod finishing after 30 virtual minutes, so queues, utilization and
waits change over time.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import Page, sync_playwright

from drasched.api.manifest import load_paths
from drasched.cli import main
from drasched.plan.html_report import html_report, pending_by_reason, percentile, wait_times
from drasched.plan.timeline import Timeline, run_sampled
from drasched.plan.whatif import with_default_duration
from drasched.sim.report import pending_reason
from drasched.sim.runner import simulate

Obj = dict[str, Any]
MIGRATION = Path(__file__).resolve().parents[3] / "examples" / "migration"


def _gpu_pod(name: str, queue: str, gpus: int) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"drasched.io/queue": queue}},
            "spec": {"containers": [{"name": "main", "image": "app:1", "resources": {
                "requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}}]}}


@pytest.fixture(scope="module")
def manifests() -> list[Obj]:
    base = [item.obj for item in load_paths([str(MIGRATION)])]
    extra = [_gpu_pod(f"research-extra-{i}", "research", 2) for i in range(4)] + [_gpu_pod("huge", "research", 8)]
    return with_default_duration(base + extra, "30m")


@pytest.fixture(scope="module")
def timeline(manifests: list[Obj]) -> Timeline:
    return run_sampled(manifests)


@pytest.fixture(scope="module")
def page(timeline: Timeline, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Page, list[str]]]:
    out = tmp_path_factory.mktemp("report")
    report = out / "report.html"
    report.write_text(html_report(timeline), encoding="utf-8")
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is needed (scripts/test.sh installs it)"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        pg = browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("requestfailed", lambda r: errors.append(f"request {r.url}"))
        pg.goto(report.as_uri())
        pg.screenshot(path=str(out / "report.png"), full_page=True)  # the test's artefact
        yield pg, errors
        browser.close()


def _rows(pg: Page, table_id: str) -> list[list[str]]:
    return [[td.inner_text() for td in tr.query_selector_all("td")]
            for tr in pg.query_selector_all(f"#{table_id} tbody tr")]


def test_the_sampled_run_ends_as_simulate_does(manifests: list[Obj], timeline: Timeline) -> None:
    assert timeline.result.objects == simulate(manifests).objects


def test_the_report_renders_without_console_errors_and_every_chart_has_data(page: tuple[Page, list[str]]) -> None:
    pg, errors = page
    assert errors == []
    charts = pg.query_selector_all("svg.chart")
    assert len(charts) >= 6
    for chart in charts:
        assert chart.query_selector_all(".datum"), chart.get_attribute("id")
        assert chart.bounding_box() is not None and chart.bounding_box()["width"] > 0  # type: ignore[index]


def test_the_summary_counts_the_simulated_pods(page: tuple[Page, list[str]], timeline: Timeline) -> None:
    pods = [o for o in timeline.result.objects if o["kind"] == "Pod"]
    pending = [p for p in pods if not p["spec"].get("nodeName")]
    assert _rows(page[0], "summary-table") == [[str(len(pods)), str(len(pods) - len(pending)), str(len(pending)),
                                                str(timeline.result.rounds), str(len(timeline.result.decisions)),
                                                "quiescent"]]


def test_queue_allocation_over_time_ends_with_the_queue_status(page: tuple[Page, list[str]],
                                                               timeline: Timeline) -> None:
    rows = _rows(page[0], "queues-0-table")
    last_time = rows[-1][0]
    shown = {r[1]: (r[2], r[3]) for r in rows if r[0] == last_time}
    queues = {o["metadata"]["name"]: o["status"] for o in timeline.result.objects if o["kind"] == "Queue"}
    assert shown == {q: (st.get("allocated", {}).get("nvidia.com/gpu", "0"),
                         st.get("fairShare", {}).get("nvidia.com/gpu", "0")) for q, st in queues.items()}
    assert any(r[2] == "8" for r in rows), "the queues held GPUs while the pods ran"
    assert {r[4] for r in rows} == {"8"}, "the quota of both queues"


def test_pending_pods_are_grouped_by_their_podscheduled_message(page: tuple[Page, list[str]],
                                                                timeline: Timeline) -> None:
    huge = next(o for o in timeline.result.objects if o["kind"] == "Pod" and o["metadata"]["name"] == "huge")
    rows = _rows(page[0], "pending-table")
    assert [(r[1], r[2], r[3]) for r in rows] == [(pending_reason(huge), "1", "default/huge")]
    assert list(pending_by_reason(timeline.result.objects).values()) == [["default/huge"]]


def test_wait_times_are_those_of_the_decision_record(page: tuple[Page, list[str]], timeline: Timeline) -> None:
    waits = wait_times(timeline)
    assert max(max(v) for v in waits.values()) == 1800, "the extra pods waited for the first ones to finish"
    assert _rows(page[0], "waits-table") == [
        [str(i + 1), w, str(len(v)), f"{percentile(v, 50):g}", f"{percentile(v, 90):g}"]
        for i, (w, v) in enumerate(waits.items())]


def test_the_device_map_shows_every_device_and_its_holder_at_the_busiest_moment(
        page: tuple[Page, list[str]], timeline: Timeline) -> None:
    rows = _rows(page[0], "devices-table")
    busiest = max(s.devices_used for s in timeline.samples)
    assert len(rows) == 16
    assert sum(1 for r in rows if r[2] != "free") == busiest == 16
    assert {r[0] for r in rows} == {"gpu-dp-0", "gpu-dp-1", "gpu-dra-0", "gpu-dra-1"}


def test_simulate_writes_html_when_the_report_name_ends_in_html(tmp_path: Path) -> None:
    report = tmp_path / "r.html"
    assert main(["simulate", str(MIGRATION), "-q", "-o", str(tmp_path / "out.yaml"), "--report", str(report)]) == 0
    text = report.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "<script" not in text and "http://" not in text.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")


def test_a_placed_pod_whose_claims_cannot_be_prepared_is_pending_by_the_drivers_error() -> None:
    """Upstream's kubelet keeps it Pending and says why only in its FailedPrepareDynamicResources event."""
    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "node" / \
        "008-prepare-error-keeps-pods-pending-without-churn.yaml"
    result = simulate([d for d in yaml.safe_load_all(scenario.read_text()) if d and d["kind"] != "Scenario"])
    groups = pending_by_reason(result.objects)
    assert sorted(p for pods in groups.values() for p in pods) == [
        "default/bare", "default/web-8695b8b654-8zgmf", "default/web-8695b8b654-fprnz"]
    # The event says "Failed to prepare dynamic resources: <error>", as upstream's; the reason shows the error.
    assert all(why.startswith("FailedPrepareDynamicResources: ResourceClaim default/")
               and why.endswith("sharing.strategy must be TimeSlicing or SpacePartitioning, not 'Magic'")
               for why in groups)


def test_the_pending_reason_drops_the_kubelets_prepare_prefix() -> None:
    """Upstream's kubelet words the event ``Failed to prepare dynamic resources: <error>``
    (kuberuntime_manager.go ``SyncPod``), and so does the simulated one; the report's reason shows
    the event reason and the error, once, whether the event says so or not (an older capture)."""
    def pod(name: str) -> Obj:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
                "status": {"phase": "Pending"}}

    def event(name: str, message: str) -> Obj:
        return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{name}.1", "namespace": "default"},
                "involvedObject": {"kind": "Pod", "name": name, "namespace": "default", "uid": name},
                "type": "Warning", "reason": "FailedPrepareDynamicResources", "message": message,
                "lastTimestamp": "2026-01-01T00:00:00Z"}

    error = "NodePrepareResources failed for ResourceClaim default/c: device n1/gpu-0 is busy"
    objects = [pod("a"), pod("b"), event("a", f"Failed to prepare dynamic resources: {error}"), event("b", error)]
    assert pending_by_reason(objects) == {f"FailedPrepareDynamicResources: {error}": ["default/a", "default/b"]}
