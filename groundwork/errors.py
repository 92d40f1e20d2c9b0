"""Typed errors at the boundary. Adapters translate driver errors into these,
so nothing above an adapter catches psycopg or opensearch-py exceptions."""

from __future__ import annotations


class GroundworkError(Exception):
    """Base of every error the platform raises on purpose."""


class EngineUnavailable(GroundworkError):
    """An engine (Postgres, OpenSearch) cannot be reached or refused the request.
    Infrastructure: runs fail and are retried."""


class StoreError(GroundworkError):
    """A store rejected an operation for a reason other than reachability."""


class DocumentRefused(StoreError):
    """A store refused a document for its own content (an immense term, a value
    over an engine limit), not for the engine's state. The stage records it on
    that version and goes on with the others; retrying would fail the same way."""

    def __init__(self, message: str, chunk_ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.chunk_ids = chunk_ids


class CapacityExhausted(StoreError):
    """A store cannot take another tenant: the OpenSearch cluster is at its
    per-node shard limit (one index per tenant). Retrying fails the same way
    until an operator adds a node or raises the heap with the limit; the
    message names the limit and both remedies. Never answered by storing the
    tenant somewhere else silently."""

    def __init__(self, message: str, limit: int | None = None) -> None:
        super().__init__(message)
        self.limit = limit


class DimensionMismatch(GroundworkError):
    """A vector's length differs from the model's declared dimension."""


class StaleGeneration(GroundworkError):
    """A compare-and-set write lost: someone else wrote first."""


class NotFound(GroundworkError):
    """Absent or not visible to the caller; the two are deliberately indistinguishable."""


class InvalidRequest(GroundworkError):
    """The caller's input is malformed or out of bounds; the message says which bound."""


class CapabilityUnavailable(GroundworkError):
    """A port has no working adapter configured; never answered with empty success."""


class Refused(GroundworkError):
    """An application-layer refusal every transport renders the same way: a
    stable `code`, a sentence, and the `alternative` to try (a refusal with no
    next step produces retry loops)."""

    code = "refused"

    def __init__(
        self,
        message: str,
        alternative: str,
        details: dict[str, object] | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.alternative = alternative
        self.details = details or {}
        if code is not None:
            self.code = code


class Forbidden(Refused):
    """The caller's key lacks the scope an operation needs."""

    code = "forbidden"


class DrillDownRefused(Refused):
    """A chunk id that was not handed to this key: the details name the valid ones."""

    code = "unknown_id"
