"""Vectors hashed from words: deterministic, offline and crude. The tests'
fake embedder and the benches' set-up stand-in (bench/connectors.py
--setup-embedder hashed) make theirs here."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable


def hashed_vector(terms: Iterable[str], dimension: int) -> tuple[float, ...]:
    """A bag of words, each term hashed into one of `dimension` slots, L2-normed."""
    values = [0.0] * dimension
    for term in terms:
        digest = hashlib.blake2b(term.encode(), digest_size=4).digest()
        values[int.from_bytes(digest, "big") % dimension] += 1.0
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return tuple(v / norm for v in values)
