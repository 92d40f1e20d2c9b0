from __future__ import annotations

import math

import pytest

from evals.metrics import mrr_at_k, ndcg_at_k, recall_at_k


def test_ndcg_is_one_for_the_ideal_order_and_less_otherwise() -> None:
    relevant = {"a": 2, "b": 1}
    assert ndcg_at_k(["a", "b", "c"], relevant) == pytest.approx(1.0)
    swapped = ndcg_at_k(["b", "a", "c"], relevant)
    expected = (1 / math.log2(2) + 3 / math.log2(3)) / (3 / math.log2(2) + 1 / math.log2(3))
    assert swapped == pytest.approx(expected)
    assert ndcg_at_k(["x", "y"], relevant) == 0.0


def test_recall_and_mrr() -> None:
    relevant = {"a": 1, "b": 1}
    assert recall_at_k(["a", "x", "b"], relevant, 2) == 0.5
    assert recall_at_k(["a", "x", "b"], relevant, 3) == 1.0
    assert mrr_at_k(["x", "b"], relevant) == 0.5
    assert mrr_at_k(["x", "y"], relevant) == 0.0
