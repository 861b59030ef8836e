"""Index arithmetic of an Indexed Job: index lists, ``successPolicy`` and per-index failure counts.

Each function follows one of upstream's ``pkg/controller/job`` (``indexed_job_utils.go``,
``success_policy.go``, ``backoff_utils.go``) and says which, so the simulated Job controller
decides an index's fate exactly as kube-controller-manager would.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from drasched.api.meta import parse_time
from drasched.controllers.workloads.podfailurepolicy import FAIL_INDEX, IGNORE, PolicyMatch

Obj = dict[str, Any]
Interval = tuple[int, int]

INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"
INT32_MAX = 2**31 - 1
REASON_SUCCESS_POLICY = "SuccessPolicy"
REASON_MAX_FAILED_INDEXES = "MaxFailedIndexesExceeded"
MESSAGE_MAX_FAILED_INDEXES = "Job has exceeded the specified maximal number of failed indexes"
REASON_FAILED_INDEXES = "FailedIndexes"
MESSAGE_FAILED_INDEXES = "Job has failed indexes"

_ATOI = re.compile(r"^[+-]?[0-9]+$")


def _atoi(text: str) -> int | None:
    """Go's ``strconv.Atoi``: an optional sign and decimal digits, nothing else."""
    return int(text) if _ATOI.match(text) else None


def parse_indexes(text: str, completions: int) -> list[Interval]:
    """Upstream ``parseIndexesFromString``: ``"1,3-5"`` as ordered intervals below ``completions``.

    A corrupt interval is skipped and the list stops at the first interval starting at or past
    ``completions``, as upstream does, so a malformed ``succeededIndexes`` never raises.
    """
    result: list[Interval] = []
    if not text:
        return result
    for part in text.split(","):
        limits = part.split("-")
        first = _atoi(limits[0])
        if first is None:
            continue
        if first >= completions:
            break
        last = first
        if len(limits) > 1:
            parsed = _atoi(limits[1])
            if parsed is None:
                continue
            last = min(parsed, completions - 1)
        if result and result[-1][1] == first - 1:
            result[-1] = (result[-1][0], last)
        else:
            result.append((first, last))
    return result


def to_intervals(indexes: set[int]) -> list[Interval]:
    """A set of indexes as ordered, merged intervals (upstream ``orderedIntervals``)."""
    out: list[Interval] = []
    for ix in sorted(indexes):
        if out and out[-1][1] == ix - 1:
            out[-1] = (out[-1][0], ix)
        else:
            out.append((ix, ix))
    return out


def _total(intervals: list[Interval]) -> int:
    return sum(last - first + 1 for first, last in intervals)


def _match_succeeded_indexes_rule(rule: list[Interval], succeeded: list[Interval], count: int | None) -> bool:
    """Upstream ``matchSucceededIndexesRule``: every index of the rule succeeded, or ``count`` of them."""
    contains = r = s = 0
    while r < len(rule) and s < len(succeeded):
        overlap = min(rule[r][1], succeeded[s][1]) - max(rule[r][0], succeeded[s][0]) + 1
        if overlap > 0:
            contains += overlap
        if succeeded[s][1] < rule[r][1]:
            s += 1
        elif succeeded[s][1] > rule[r][1]:
            r += 1
        else:
            s += 1
            r += 1
    return contains == _total(rule) or (count is not None and contains >= count)


def match_success_policy(policy: Obj | None, completions: int, succeeded: set[int]) -> str | None:
    """Upstream ``matchSuccessPolicy``: the ``SuccessCriteriaMet`` message of the first rule met, else None."""
    if not policy or not succeeded:
        return None
    done = to_intervals(succeeded)
    for index, rule in enumerate(policy.get("rules") or []):
        count = rule.get("succeededCount")
        count = int(count) if count is not None else None
        if rule.get("succeededIndexes") is not None:
            required = parse_indexes(str(rule["succeededIndexes"]), completions)
            if not required:
                continue  # unparsable: the rule is skipped, as upstream skips it
            if _match_succeeded_indexes_rule(required, done, count):
                return f"Matched rules at index {index}"
        elif count is not None and _total(done) >= count:
            return f"Matched rules at index {index}"
    return None


def _annotation_count(pod: Obj, key: str) -> int:
    """Upstream ``parseInt32`` of a count annotation: 0 when missing, unparsable or out of int32."""
    value = _atoi(str(((pod.get("metadata") or {}).get("annotations") or {}).get(key, "")))
    return value if value is not None and 0 <= value <= INT32_MAX else 0


def index_failure_count(pod: Obj) -> int:
    """Upstream ``getIndexFailureCount``: failures of the pod's index before it, counted ones only."""
    return _annotation_count(pod, INDEX_FAILURE_COUNT)


def index_absolute_failure_count(pod: Obj) -> int:
    """Upstream ``getIndexAbsoluteFailureCount``: counted and ignored failures before the pod."""
    return _annotation_count(pod, INDEX_FAILURE_COUNT) + _annotation_count(pod, INDEX_IGNORED_FAILURE_COUNT)


def counts_as_failure(match: PolicyMatch | None) -> bool:
    """Upstream ``matchPodFailurePolicy``'s ``countFailed``: every action but ``Ignore`` counts."""
    return match is None or match.action != IGNORE


def new_index_failure_counts(replaced: Obj | None, match: PolicyMatch | None) -> tuple[int, int]:
    """Upstream ``getNewIndexFailureCounts``: (failure, ignored failure) counts of a replacement pod."""
    if replaced is None:
        return 0, 0
    failed = index_failure_count(replaced)
    ignored = _annotation_count(replaced, INDEX_IGNORED_FAILURE_COUNT)
    if counts_as_failure(match):
        return failed + 1, ignored
    return failed, ignored + 1


def is_index_failed(pod: Obj, match: PolicyMatch | None, backoff_limit_per_index: int) -> bool:
    """Upstream ``isIndexFailed``: the failed pod ends its index (``FailIndex``, or its limit is spent)."""
    if match is not None and match.action == FAIL_INDEX:
        return True
    return counts_as_failure(match) and index_failure_count(pod) >= backoff_limit_per_index


def finished_time(pod: Obj, fallback: datetime) -> datetime:
    """Upstream ``getFinishedTime``: the last container's ``finishedAt`` (the pod-failure back-off
    counts from it), else ``fallback`` (when the controller saw the pod end or vanish)."""
    latest: datetime | None = None
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        at = ((cs.get("state") or {}).get("terminated") or {}).get("finishedAt")
        if not at:
            return fallback
        try:
            when = parse_time(str(at))
        except ValueError:
            return fallback
        latest = when if latest is None or when > latest else latest
    return latest or fallback
