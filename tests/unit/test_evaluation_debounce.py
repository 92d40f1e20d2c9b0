"""The evaluation debounce's rules that the e2e sensor tests do not reach:
a model switch, candidates, and the cursor's round trip."""

from __future__ import annotations

from pipelines.evaluation_debounce import (
    EVALUATION_DEBOUNCE_SECONDS as D,
)
from pipelines.evaluation_debounce import (
    Debounce,
    Served,
    adopt,
    due_evaluations,
    requested,
)


def _evaluate_when_due(debounce: Debounce, current: dict, now: float) -> list:
    due = due_evaluations(debounce, current, current.keys(), now)
    for key in due:
        requested(debounce, key, current[key])
    return due


def test_switching_to_a_model_is_measured_and_leaving_one_is_not() -> None:
    old, new = ("t", "old"), ("t", "new")
    debounce = Debounce()
    adopt(debounce, old, Served(7, 1.0, serving=True), evaluated_before=True)
    adopt(debounce, new, Served(7, 1.0, serving=False), evaluated_before=True)
    switched = {old: Served(7, 1.0, serving=False), new: Served(7, 1.0, serving=True)}
    assert _evaluate_when_due(debounce, switched, 0.0) == []
    assert _evaluate_when_due(debounce, switched, D) == [new]
    assert _evaluate_when_due(debounce, switched, 10 * D) == []


def test_a_never_evaluated_key_is_evaluated_once_and_an_adopted_one_is_not() -> None:
    fresh, known = ("a", "m"), ("b", "m")
    debounce = Debounce()
    adopt(debounce, fresh, Served(3, 1.0, True), evaluated_before=False)
    adopt(debounce, known, Served(3, 1.0, True), evaluated_before=True)
    current = {fresh: Served(3, 1.0, True), known: Served(3, 1.0, True)}
    assert _evaluate_when_due(debounce, current, 0.0) == []
    assert _evaluate_when_due(debounce, current, D) == [fresh]
    assert _evaluate_when_due(debounce, current, 2 * D) == []


def test_the_cursor_round_trips_a_waiting_change() -> None:
    key = ("t", "m")
    debounce = Debounce(runs_after=12.5)
    adopt(debounce, key, Served(1, 1.0, True), evaluated_before=True)
    assert due_evaluations(debounce, {key: Served(2, 1.0, True)}, [key], 100.0) == []
    again = Debounce.loads(debounce.dumps())
    assert again == debounce
    assert due_evaluations(again, {key: Served(2, 1.0, True)}, [key], 100.0 + D) == [key]


def test_a_tenant_whose_suite_went_is_forgotten() -> None:
    key = ("gone", "m")
    debounce = Debounce()
    adopt(debounce, key, Served(1, 1.0, True), evaluated_before=False)
    assert due_evaluations(debounce, {}, [key], D) == []
    assert debounce.keys == {}
