"""Fair under load: each tenant's request rates and storage quotas, the rules
once for every transport (HTTP routes through the route-scope check, the
tools over HTTP and MCP, the CLI and the admin route that set them).

Rates are token buckets kept in the serving process's memory: a bucket of
`burst` tokens refilled at `requests_per_second`, one for the tenant (all its
keys draw from it) and one for each key when the tenant has a per-key rate.
A request takes a token from every bucket that applies, or from none: a
refusal costs no bucket a token. N API processes each allow the rate (the
buckets are per process, not shared); divide the rate by the processes an
operator runs when the total must hold. Kept in PostgreSQL instead, a bucket
was one more statement on every request (measured in docs/operations.md).

Quotas are checked before any byte is kept: a registration or an upload
session that would take the tenant past its documents or its bytes is refused
naming the limit. Concurrent registrations are each checked against what is
stored, so two racing ones can pass the quota by at most the second one.

No limit unless an operator sets one: a tenant without limits pays a None
check per request and no query per registration.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Protocol

from groundwork.catalog import StorageUsage, TenantDirectory, TenantLimits, TenantQuotas
from groundwork.errors import Refused
from groundwork.ports import Principal

#: the refusal codes, the same on every transport (HTTP 429 with Retry-After, 413)
RATE_LIMITED = "rate_limited"
QUOTA_EXCEEDED = "quota_exceeded"
#: buckets kept per process before the full (idle) ones are dropped
MAX_BUCKETS = 10_000
LIMIT_NAMES = tuple(f.name for f in fields(TenantLimits))


def key_digest(secret: str) -> str:
    """How the limiter knows a key before it is looked up (never stored)."""
    return hashlib.sha256(secret.encode()).hexdigest()


#: how long a refusal known at the door is held before it is answered (at most
#: the wait itself): a client that retries at once is slowed to a few requests
#: per second per connection, for no CPU (an asyncio sleep)
MAX_HOLD_SECONDS = 0.25


class RateLimited(Refused):
    code = RATE_LIMITED
    #: how long the transport may hold the answer (see MAX_HOLD_SECONDS)
    hold_seconds = 0.0

    @property
    def retry_after_seconds(self) -> int:
        return int(self.details.get("retry_after_seconds", 1))  # type: ignore[call-overload]


class QuotaExceeded(Refused):
    code = QUOTA_EXCEEDED


@dataclass(slots=True)
class _Bucket:
    rate: float
    capacity: float
    tokens: float
    stamp: float

    def refill(self, now: float, rate: float, capacity: float) -> None:
        if (rate, capacity) != (self.rate, self.capacity):  # limits changed: adopt them
            self.rate, self.capacity = rate, capacity
            self.tokens = min(self.tokens, capacity)
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait(self) -> float:
        """Seconds until one token is here (0: one is)."""
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / self.rate


def _capacity(rate: float, burst: int | None) -> float:
    return float(burst if burst is not None else max(1, math.ceil(rate)))


class RateLimiter:
    """The process's buckets. Thread-safe (one lock; a check is microseconds)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        #: a limited key's digest -> (tenant, key, limits) as its last admitted
        #: request found them: lets `refuse_early` answer a flood without a lookup
        self._known: dict[str, tuple[str, str, TenantLimits]] = {}
        self.admitted = 0
        self.refused = 0

    def _bucket(self, key: tuple[str, str], rate: float, capacity: float, now: float) -> _Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= MAX_BUCKETS:
                self._drop_full(now)
            bucket = self._buckets[key] = _Bucket(rate, capacity, capacity, now)
        bucket.refill(now, rate, capacity)
        return bucket

    def _drop_full(self, now: float) -> None:
        for key, b in list(self._buckets.items()):
            if b.tokens + (now - b.stamp) * b.rate >= b.capacity:
                del self._buckets[key]
        if len(self._buckets) >= MAX_BUCKETS:
            self._buckets.clear()  # every bucket busy: start afresh rather than grow

    def _applying(
        self, tenant_id: str, key_id: str, limits: TenantLimits, now: float
    ) -> list[tuple[str, _Bucket]]:
        buckets: list[tuple[str, _Bucket]] = []
        if limits.requests_per_second is not None:
            rate = limits.requests_per_second
            b = self._bucket(("tenant", tenant_id), rate, _capacity(rate, limits.burst), now)
            buckets.append(("requests_per_second", b))
        if limits.key_requests_per_second is not None:
            rate = limits.key_requests_per_second
            b = self._bucket(("key", key_id), rate, _capacity(rate, limits.key_burst), now)
            buckets.append(("key_requests_per_second", b))
        return buckets

    def admit(self, who: Principal, limits: TenantLimits, key_digest: str | None = None) -> None:
        """Take a token for this request from the tenant's bucket and the key's,
        or raise RateLimited naming the limit and when to retry. `key_digest`
        (a digest of the key's secret) remembers the key for `refuse_early`."""
        if not limits.rated:
            return
        now = self._clock()
        with self._lock:
            if key_digest is not None:
                if len(self._known) >= MAX_BUCKETS:
                    self._known.clear()
                self._known[key_digest] = (who.tenant_id, who.key_id, limits)
            refusal = self._take(who.tenant_id, who.key_id, limits, now)
        if refusal is not None:
            raise refusal

    def refuse_early(self, key_digest: str) -> RateLimited | None:
        """The refusal for a key whose buckets are empty now, known from an
        earlier request of this process, without looking the key up (a flood
        is answered for microseconds, not for a request's worth of work); None
        when the request must go the whole way (`admit` then takes the token).
        A key revoked meanwhile is told 429, not 401, until its bucket refills."""
        with self._lock:
            known = self._known.get(key_digest)
            if known is None:
                return None
            tenant_id, key_id, limits = known
            buckets = self._applying(tenant_id, key_id, limits, self._clock())
            if all(b.wait() <= 0.0 for _, b in buckets):
                return None
            self.refused += 1
            return self._refusal(tenant_id, buckets)

    def _take(
        self, tenant_id: str, key_id: str, limits: TenantLimits, now: float
    ) -> RateLimited | None:
        buckets = self._applying(tenant_id, key_id, limits, now)
        if all(b.wait() <= 0.0 for _, b in buckets):
            for _, b in buckets:
                b.tokens -= 1.0
            self.admitted += 1
            return None
        self.refused += 1
        return self._refusal(tenant_id, buckets)

    @staticmethod
    def _refusal(tenant_id: str, buckets: list[tuple[str, _Bucket]]) -> RateLimited:
        wait, name, bucket = max(((b.wait(), n, b) for n, b in buckets), key=lambda w: w[0])
        retry = max(1, math.ceil(wait))
        whose = "this key" if name.startswith("key_") else f"tenant {tenant_id}"
        refusal = RateLimited(
            f"{whose} is over its rate limit of {bucket.rate:g} requests per second "
            f"(burst {int(bucket.capacity)})",
            f"retry after {retry} s (Retry-After); spread requests out, or ask an operator "
            "to raise the limit (groundwork tenant limits)",
            {"limit": name, "limit_value": bucket.rate, "retry_after_seconds": retry},
        )
        refusal.hold_seconds = min(MAX_HOLD_SECONDS, wait)
        return refusal

    def state(self, who_tenant: str) -> dict[str, object]:
        """The tenant's bucket as this process holds it (tokens now), for its view."""
        with self._lock:
            bucket = self._buckets.get(("tenant", who_tenant))
            if bucket is None:
                return {"tokens": None}
            bucket.refill(self._clock(), bucket.rate, bucket.capacity)
            return {"tokens": round(bucket.tokens, 2)}

    def summary(self) -> dict[str, int]:
        with self._lock:
            return {
                "buckets": len(self._buckets),
                "admitted": self.admitted,
                "refused": self.refused,
            }


# -- quotas ---------------------------------------------------------------------


class QuotaCatalog(TenantDirectory, TenantQuotas, Protocol):
    """What the quota check asks of the catalog."""


def check_quota(
    catalog: QuotaCatalog, tenant_id: str, incoming_bytes: int, origin: str | None
) -> None:
    """Refuse (QuotaExceeded, naming the limit) a registration of `incoming_bytes`
    at `origin` that would take the tenant past a quota; a new version of a live
    source adds bytes, not a document. Call before any byte is kept."""
    tenant = catalog.get_tenant(tenant_id)
    if tenant is None or not tenant.limits.quota:
        return
    limits = tenant.limits
    usage = catalog.storage_usage(tenant_id, origin)
    adds_document = origin is None or not usage.has_origin
    if (
        limits.max_documents is not None
        and adds_document
        and usage.documents + 1 > limits.max_documents
    ):
        raise _over("max_documents", limits.max_documents, usage.documents, tenant_id, "documents")
    if limits.max_bytes is not None and usage.bytes + incoming_bytes > limits.max_bytes:
        raise _over("max_bytes", limits.max_bytes, usage.bytes, tenant_id, "bytes", incoming_bytes)


def _over(
    name: str, limit: int, used: int, tenant_id: str, unit: str, incoming: int = 1
) -> QuotaExceeded:
    return QuotaExceeded(
        f"tenant {tenant_id} is at its quota {name} = {limit} ({used} {unit} stored, "
        f"{incoming} more asked); nothing was stored",
        "delete sources the tenant no longer needs, or ask an operator to raise the "
        f"limit (groundwork tenant limits {tenant_id} --{name.replace('_', '-')} N)",
        {"limit": name, "limit_value": limit, "used": used, "incoming": incoming},
    )


# -- setting and reading --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LimitsView:
    tenant_id: str
    limits: TenantLimits
    usage: StorageUsage

    def to_dict(self) -> dict[str, object]:
        return {
            "tenant_id": self.tenant_id,
            "limits": asdict(self.limits),
            "usage": {"documents": self.usage.documents, "bytes": self.usage.bytes},
        }


def _existing_limits(catalog: QuotaCatalog, tenant_id: str) -> TenantLimits:
    tenant = catalog.get_tenant(tenant_id)
    if tenant is None:
        raise Refused(
            f"no tenant {tenant_id}", "create it first (groundwork tenant create)", code="not_found"
        )
    return tenant.limits


class LimitsPorts(Protocol):
    """What reading and setting limits asks of the platform (the whole one:
    an operator's call names any tenant)."""

    @property
    def catalog(self) -> QuotaCatalog: ...


def tenant_limits(ports: LimitsPorts, tenant_id: str) -> LimitsView:
    catalog = ports.catalog
    limits = _existing_limits(catalog, tenant_id)
    return LimitsView(tenant_id, limits, catalog.storage_usage(tenant_id))


def change_limits(
    ports: LimitsPorts, tenant_id: str, changes: Mapping[str, float | int | None]
) -> LimitsView:
    """Set the named limits (None clears one: no limit); the others keep their
    values. Rates are positive, bursts at least 1, quotas at least 0."""
    catalog = ports.catalog
    unknown = sorted(set(changes) - set(LIMIT_NAMES))
    if unknown:
        raise Refused(
            f"unknown limits: {', '.join(unknown)}",
            f"name limits from {', '.join(LIMIT_NAMES)}",
            code="invalid",
        )
    for name, value in changes.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise Refused(
                f"{name} must be a number", "send a number, or null for no limit", code="invalid"
            )
        rate = name.endswith("requests_per_second")
        floor = 1 if name.endswith("burst") else 0
        if (rate and not value > 0) or (not rate and (value < floor or value != int(value))):
            bound = "a number above 0" if rate else f"a whole number of at least {floor}"
            raise Refused(f"{name} must be {bound}", "send a valid value, or null", code="invalid")
        if not rate and value > 2**62:
            raise Refused(f"{name} is too large", "send a smaller value, or null", code="invalid")
    current = _existing_limits(catalog, tenant_id)
    typed = {
        k: (None if v is None else float(v) if k.endswith("per_second") else int(v))
        for k, v in changes.items()
    }
    updated = replace(current, **typed)  # type: ignore[arg-type]
    if not catalog.set_tenant_limits(tenant_id, updated):
        raise Refused(f"no tenant {tenant_id}", "create it first", code="not_found")
    return LimitsView(tenant_id, updated, catalog.storage_usage(tenant_id))
