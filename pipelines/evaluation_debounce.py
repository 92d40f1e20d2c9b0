"""When a tenant x model is evaluated again: only after what it serves changed,
and at most once per debounce interval.

An evaluation of a 5,183-document tenant takes both cores for about two
minutes. It used to follow every successful ingest run, so an hourly rescan
that published nothing evaluated every tenant every hour, and a tenant
receiving a file every few seconds was evaluated every few seconds. Here a
key (tenant, model) is evaluated when its served state differs from the one
its last evaluation saw, once that state has been quiet for
`EVALUATION_DEBOUNCE_SECONDS` (a burst of uploads is one evaluation, after
the burst), or has waited `MAX_DEFERRAL_SECONDS` (a tenant that never goes
quiet is still measured a few times an hour). Pure: the sensor supplies the
states and the time, and keeps the `Debounce` in its cursor.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field

#: A burst of inbox files ingests in runs seconds apart; five quiet minutes
#: means the burst is over, and keeps a tenant at no more than 12 runs an hour.
EVALUATION_DEBOUNCE_SECONDS = 300.0
#: The longest a changed tenant waits for quiet before it is evaluated anyway.
MAX_DEFERRAL_SECONDS = 6 * EVALUATION_DEBOUNCE_SECONDS


@dataclass(frozen=True, slots=True)
class Served:
    """What an evaluation of a key sees: the tenant's search generation, its
    suite's version, and whether the model is the one serving."""

    generation: int
    suite_updated_at: float
    serving: bool

    def differs_from(self, evaluated: Served | None) -> bool:
        """A model that stops serving has not changed what it would be scored on,
        so that flip alone is no reason to evaluate it; becoming the serving
        model is (a switch is measured)."""
        if evaluated is None:
            return True
        return (
            self.generation != evaluated.generation
            or self.suite_updated_at != evaluated.suite_updated_at
            or (self.serving and not evaluated.serving)
        )

    def to_list(self) -> list[object]:
        return [self.generation, self.suite_updated_at, self.serving]

    @classmethod
    def from_list(cls, raw: list[object] | None) -> Served | None:
        if raw is None:
            return None
        generation, suite, serving = raw
        return cls(int(generation), float(suite), bool(serving))  # type: ignore[arg-type,call-overload]


Key = tuple[str, str]  # (tenant, model)


@dataclass(slots=True)
class KeyState:
    evaluated: Served | None  # what the last requested evaluation saw
    seen: Served | None = None  # the changed state waiting, if any
    waiting_since: float | None = None  # when a change was first seen
    changed_at: float | None = None  # when the waiting state last changed


@dataclass(slots=True)
class Debounce:
    """The sensor's cursor: per key what was evaluated and what waits."""

    keys: dict[Key, KeyState] = field(default_factory=dict)
    runs_after: float | None = None  # model_publish runs finished before this are handled

    def dumps(self) -> str:
        return json.dumps(
            {
                "runs_after": self.runs_after,
                "keys": [
                    [
                        tenant,
                        model,
                        s.evaluated.to_list() if s.evaluated else None,
                        s.seen.to_list() if s.seen else None,
                        s.waiting_since,
                        s.changed_at,
                    ]
                    for (tenant, model), s in sorted(self.keys.items())
                ],
            },
            separators=(",", ":"),
        )

    @classmethod
    def loads(cls, cursor: str | None) -> Debounce:
        if not cursor:
            return cls()
        raw = json.loads(cursor)
        return cls(
            keys={
                (tenant, model): KeyState(
                    Served.from_list(evaluated), Served.from_list(seen), since, changed
                )
                for tenant, model, evaluated, seen, since, changed in raw["keys"]
            },
            runs_after=raw.get("runs_after"),
        )


def due_evaluations(
    debounce: Debounce,
    current: dict[Key, Served],
    examine: Collection[Key],
    now: float,
    quiet_seconds: float = EVALUATION_DEBOUNCE_SECONDS,
    max_deferral_seconds: float = MAX_DEFERRAL_SECONDS,
) -> list[Key]:
    """The keys whose evaluation is due now. `current` holds every key that
    may be evaluated (the others are forgotten); `examine` the keys to look at
    this tick (the serving keys, candidates whose publication just finished,
    and whatever is waiting). A key met for the first time must be `adopt`ed
    first. The caller `requested` each key it did request (one with an
    evaluation already running stays waiting)."""
    debounce.keys = {k: s for k, s in debounce.keys.items() if k in current}
    due: list[Key] = []
    for key in sorted(examine):
        served = current.get(key)
        state = debounce.keys.get(key)
        if served is None or state is None:
            continue
        if not served.differs_from(state.evaluated):
            state.seen = state.waiting_since = state.changed_at = None
            continue
        if state.seen != served:
            state.seen, state.changed_at = served, now
            if state.waiting_since is None:
                state.waiting_since = now
        assert state.changed_at is not None and state.waiting_since is not None
        quiet = now - state.changed_at >= quiet_seconds
        overdue = now - state.waiting_since >= max_deferral_seconds
        if quiet or overdue:
            due.append(key)
    return due


def adopt(debounce: Debounce, key: Key, served: Served, evaluated_before: bool) -> None:
    """A key met for the first time (a new suite, a first candidate, an upgrade
    from the sensor that evaluated after every run): one that was evaluated
    before is taken as evaluated in its current state, so an upgrade does not
    evaluate every tenant at once; one never evaluated waits for its first."""
    debounce.keys[key] = KeyState(evaluated=served if evaluated_before else None)


def requested(debounce: Debounce, key: Key, served: Served) -> None:
    debounce.keys[key] = KeyState(evaluated=served)


def waiting(debounce: Debounce) -> list[Key]:
    return [k for k, s in debounce.keys.items() if s.seen is not None]
