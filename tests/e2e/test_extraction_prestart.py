"""A run requested because a file arrived starts its extraction child with
the run, so the child's imports overlap registration; any other run starts
none until a document needs one (an hourly rescan of an unchanged inbox)."""

from __future__ import annotations

import dagster as dg
import pytest

from groundwork.ports import INBOX_TRIGGER, REGISTRATION_TRIGGER, TRIGGER_LABEL
from resources.dagster_glue.platform_resource import ExtractionWorkerResource


def _started_at_first_step(tags: dict[str, str]) -> bool:
    seen: list[bool] = []

    @dg.asset
    def first_step(extraction: ExtractionWorkerResource) -> None:
        # the resource's first child, before any document was handed to it
        seen.append(extraction.extractors()[0]._process is not None)

    result = dg.materialize(
        [first_step],
        resources={"extraction": ExtractionWorkerResource(workers=1)},
        tags=tags,
    )
    assert result.success
    return seen[0]


@pytest.mark.parametrize("trigger", [REGISTRATION_TRIGGER, INBOX_TRIGGER])
def test_a_run_for_an_arrived_file_starts_its_child_with_the_run(trigger: str) -> None:
    assert _started_at_first_step({TRIGGER_LABEL: trigger})


def test_any_other_run_starts_no_child_before_a_document() -> None:
    assert not _started_at_first_step({})
    assert not _started_at_first_step({TRIGGER_LABEL: "hourly-rescan"})
