"""The generated dagster.yaml is one Dagster accepts, with the warm launcher
and one run per partition at a time (a config Dagster refuses stops the whole
stack at start, which no other test would notice)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from pipelines.warm_launcher import WarmRunLauncher
from resources.composition.settings import GroundworkSettings
from resources.dagster_glue.instance import write_instance_config


def test_the_generated_instance_config_loads(
    tmp_path: Path, settings: GroundworkSettings, engines
) -> None:
    write_instance_config(tmp_path, engines.server_url)
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert isinstance(instance.run_launcher, WarmRunLauncher)
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
        assert {
            "key": "dagster/partition",
            "value": {"applyLimitPerUniqueValue": True},
            "limit": 1,
        } in limits
        # a killed run's pool slots are freed, or it blocks every later pooled step
        assert instance.run_monitoring_settings["free_slots_after_run_end_seconds"] > 0
