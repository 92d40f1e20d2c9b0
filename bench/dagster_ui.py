"""The Dagster UI at many tenants: the asset pages' queries and a model-switch
backfill for every tenant, through a real `dagster-webserver`.

    uv run python bench/dagster_ui.py [--tenants 1000] [--port 3091]

Builds a scratch Dagster instance (its own PostgreSQL database,
`dagster_uibench`, on the embedded server) holding `--tenants` tenant
partitions, each with a materialization of `source_registrations` (tenant
partitions) and of `published_index` for the serving model (tenant x model
partitions), as a live deployment would after its first ingest. Starts
`dagster-webserver` on this repository's workspace against it and times,
median of five, over HTTP as the browser sends them:

- the asset catalog (every asset node with its partitions definition);
- the partition health bar of a tenant asset and of a tenant x model asset
  (the query the asset page issues: every partition key and its status);
- launching a backfill of `embeddings` + `published_index` for every tenant of
  the second model (the partitions a model switch needs), as the UI's launch
  dialog submits it, then reading the backfill back (its partition count) and
  cancelling it (no daemon runs here, so nothing executes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg  # noqa: E402

from groundwork.embedding_models import KNOWN_MODELS  # noqa: E402
from resources.composition.platform import ensure_engines  # noqa: E402
from resources.composition.settings import GroundworkSettings  # noqa: E402
from resources.dagster_glue.instance import write_instance_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATABASE = "dagster_uibench"

PARTITION_HEALTH = """
query PartitionHealthQuery($assetKey: AssetKeyInput!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode {
      id
      partitionKeysByDimension { name type partitionKeys }
      assetPartitionStatuses {
        ... on DefaultPartitionStatuses { materializedPartitions materializingPartitions failedPartitions }
        ... on MultiPartitionStatuses {
          primaryDimensionName
          ranges {
            primaryDimStartKey primaryDimEndKey
            secondaryDim {
              ... on DefaultPartitionStatuses { materializedPartitions materializingPartitions failedPartitions }
            }
          }
        }
      }
    }
  }
}
"""

ASSET_CATALOG = """
query AssetCatalog {
  assetNodes { id assetKey { path } groupName partitionDefinition { description } }
}
"""

LAUNCH_BACKFILL = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on InvalidStepError { invalidStepKey }
    ... on InvalidOutputError { stepKey }
    ... on UnauthorizedError { message }
  }
}
"""

BACKFILL = """
query Backfill($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill { id status numPartitions }
  }
}
"""

CANCEL = """
mutation Cancel($id: String!) { cancelPartitionBackfill(backfillId: $id) { __typename } }
"""


def graphql(url: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"{url}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        answer: dict[str, Any] = json.loads(response.read())
    if answer.get("errors"):
        raise RuntimeError(json.dumps(answer["errors"])[:1000])
    return answer["data"]  # type: ignore[no-any-return]


def timed(run: Callable[[], object], repeats: int = 5) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times), result


def seed_instance(dagster_home: Path, tenants: list[str], model: str) -> None:
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        known = set(instance.get_dynamic_partitions("tenant"))
        missing = [t for t in tenants if t not in known]
        if not missing:
            return
        instance.add_dynamic_partitions("tenant", missing)
        for tenant in missing:
            instance.report_runless_asset_event(
                dg.AssetMaterialization("source_registrations", partition=tenant)
            )
            key = dg.MultiPartitionKey({"tenant": tenant, "embedding_model": model})
            instance.report_runless_asset_event(
                dg.AssetMaterialization("published_index", partition=str(key))
            )


def wait_for(url: str, process: subprocess.Popen[bytes], timeout: float = 240.0) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if process.poll() is not None:
            raise RuntimeError(f"dagster-webserver exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/server_info", timeout=2):
                pass
            data = graphql(url, "{ workspaceOrError { ... on Workspace { id } } }")
            if data.get("workspaceOrError"):
                return time.perf_counter() - started
        except (OSError, RuntimeError):
            pass
        time.sleep(1)
    raise RuntimeError("dagster-webserver did not answer")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--port", type=int, default=3091)
    args = parser.parse_args()
    settings = GroundworkSettings.from_env()
    server_url = ensure_engines(settings).server_url
    serving, candidate = (
        settings.default_model_key,
        next(k for k in sorted(KNOWN_MODELS) if k != settings.default_model_key),
    )
    tenants = [f"t{n:05d}" for n in range(args.tenants)]
    with tempfile.TemporaryDirectory() as scratch:
        dagster_home = Path(scratch)
        write_instance_config(dagster_home, server_url, DATABASE)
        started = time.perf_counter()
        seed_instance(dagster_home, tenants, serving)
        print(
            f"{args.tenants} tenant partitions, 2 materializations each "
            f"(set-up {time.perf_counter() - started:.0f} s)"
        )
        url = f"http://127.0.0.1:{args.port}"
        env = {**os.environ, "DAGSTER_HOME": str(dagster_home)}
        process = subprocess.Popen(
            [sys.executable, "-m", "dagster_webserver", "-w", "workspace.yaml"]
            + ["-h", "127.0.0.1", "-p", str(args.port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            print(f"webserver answering after          {wait_for(url, process):8.1f} s")
            ms, _ = timed(lambda: graphql(url, ASSET_CATALOG))
            print(f"asset catalog                      {ms:8.1f} ms")
            for asset in ("source_registrations", "published_index"):
                ms, data = timed(
                    lambda asset=asset: graphql(  # type: ignore[misc]
                        url, PARTITION_HEALTH, {"assetKey": {"path": [asset]}}
                    )
                )
                node = data["assetNodeOrError"]  # type: ignore[index]
                keys = sum(len(d["partitionKeys"]) for d in node["partitionKeysByDimension"])
                print(f"partition health {asset:18s}{ms:8.1f} ms  ({keys} dimension keys)")
            partitions = [
                str(dg.MultiPartitionKey({"tenant": t, "embedding_model": candidate}))
                for t in tenants
            ]
            params = {
                "partitionNames": partitions,
                "assetSelection": [{"path": ["embeddings"]}, {"path": ["published_index"]}],
                "title": f"switch every tenant to {candidate}",
            }
            started = time.perf_counter()
            launched = graphql(url, LAUNCH_BACKFILL, {"params": params})["launchPartitionBackfill"]
            launch_ms = 1000 * (time.perf_counter() - started)
            if launched["__typename"] != "LaunchBackfillSuccess":
                print(f"backfill refused: {launched}")
                return 1
            backfill_id = launched["backfillId"]
            found = graphql(url, BACKFILL, {"id": backfill_id})["partitionBackfillOrError"]
            print(
                f"backfill of {candidate} for every tenant launched in {launch_ms:.0f} ms: "
                f"{found['numPartitions']} partitions x 2 assets, status {found['status']}"
            )
            graphql(url, CANCEL, {"id": backfill_id})
        finally:
            process.terminate()
            process.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
