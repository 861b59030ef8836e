"""BindRequest -> writes (claims, statuses, binding); rollback; idempotent retries."""

from drasched.binder.binder import FAILED, PENDING, SUCCEEDED, Backoff, Binder, BindOutcome
from drasched.binder.claims import EXTENDED_CLAIM_ANNOTATION, FINALIZER, BindFailure
from drasched.binder.controller import BinderController

__all__ = [
    "EXTENDED_CLAIM_ANNOTATION",
    "FAILED",
    "FINALIZER",
    "PENDING",
    "SUCCEEDED",
    "Backoff",
    "BindFailure",
    "BindOutcome",
    "Binder",
    "BinderController",
]
