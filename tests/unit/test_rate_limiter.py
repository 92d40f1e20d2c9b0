"""The token buckets of groundwork.services.limits on a fake clock: a burst,
then the rate; a refusal takes no token from any bucket; a known key over its
rate is refused before its lookup; no limits, no bucket."""

from __future__ import annotations

import pytest

from groundwork.catalog import TenantLimits
from groundwork.ports import Principal
from groundwork.services.limits import MAX_HOLD_SECONDS, RateLimited, RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _who(key: str) -> Principal:
    return Principal("t-a", ("tenant:t-a",), key_id=key)


def test_a_burst_then_the_rate_and_the_wait_it_names() -> None:
    clock = Clock()
    limiter = RateLimiter(clock)
    limits = TenantLimits(requests_per_second=2, burst=3)
    for _ in range(3):
        limiter.admit(_who("k1"), limits)
    with pytest.raises(RateLimited) as refused:
        limiter.admit(_who("k2"), limits)  # the tenant's bucket: every key draws from it
    assert refused.value.details["limit"] == "requests_per_second"
    assert refused.value.retry_after_seconds == 1
    assert (
        refused.value.hold_seconds == pytest.approx(0.5)
        or refused.value.hold_seconds == MAX_HOLD_SECONDS
    )
    clock.now += 0.5
    limiter.admit(_who("k2"), limits)
    assert limiter.summary() == {"buckets": 1, "admitted": 4, "refused": 1}


def test_a_refusal_takes_no_token_and_keys_have_their_own_buckets() -> None:
    clock = Clock()
    limiter = RateLimiter(clock)
    limits = TenantLimits(requests_per_second=10, burst=10, key_requests_per_second=1, key_burst=1)
    limiter.admit(_who("k1"), limits)
    for _ in range(5):
        with pytest.raises(RateLimited) as refused:
            limiter.admit(_who("k1"), limits)
        assert refused.value.details["limit"] == "key_requests_per_second"
    # the five refusals took nothing from the tenant's bucket: nine left for others
    for n in range(9):
        limiter.admit(_who(f"k{n + 2}"), limits)
    with pytest.raises(RateLimited):
        limiter.admit(_who("k99"), limits)


def test_a_known_key_over_its_rate_is_refused_early_and_only_then() -> None:
    clock = Clock()
    limiter = RateLimiter(clock)
    limits = TenantLimits(key_requests_per_second=1, key_burst=1)
    assert limiter.refuse_early("digest") is None  # unknown: the whole way
    limiter.admit(_who("k1"), limits, "digest")
    early = limiter.refuse_early("digest")
    assert early is not None and early.code == "rate_limited"
    clock.now += 1.0
    assert limiter.refuse_early("digest") is None  # a token again: admitted the whole way
    limiter.admit(_who("k1"), limits, "digest")


def test_no_limits_no_bucket() -> None:
    limiter = RateLimiter(Clock())
    for _ in range(1000):
        limiter.admit(_who("k1"), TenantLimits(max_documents=3))
    assert limiter.summary()["buckets"] == 0
