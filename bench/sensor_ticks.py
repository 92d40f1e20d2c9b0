"""Sensor tick cost at many tenants.

    uv run python bench/sensor_ticks.py [--tenants 1000] [--files 3]

Creates the tenants in a database of its own (`groundwork_ticks`), each with
a few registered files waiting for extraction, plus one large tenant with
chunks (so per-tenant counting shows its cost), then times, median of five:

- the catalog reads a pending-work tick makes: one `pending_work_all` read,
  against the former two reads per tenant (`pending_work` + `counts`);
- whole ticks of `pending_work_sensor`, `tenant_partitions_sensor` and
  `deletion_sensor`, evaluated by Dagster on a scratch instance.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import dagster as dg  # noqa: E402

from bench.timing import median_ms  # noqa: E402
from groundwork.catalog import Catalog  # noqa: E402
from groundwork.chunking import ChunkingPolicy, chunk_blocks  # noqa: E402
from groundwork.documents import ExtractedDocument  # noqa: E402
from groundwork.extract.markdown import markdown_blocks  # noqa: E402
from groundwork.stages.registration import Registration, register_file  # noqa: E402
from pipelines.sensors import (  # noqa: E402
    deletion_sensor,
    pending_work_sensor,
    tenant_partitions_sensor,
)
from resources.composition.platform import Platform, connect, ensure_engines  # noqa: E402
from resources.composition.settings import GroundworkSettings  # noqa: E402
from resources.dagster_glue.platform_resource import GroundworkResource  # noqa: E402

DATABASE = "groundwork_ticks"
PREFIX = "gwticks"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--files", type=int, default=3)
    parser.add_argument("--large-chunks", type=int, default=50_000)
    return parser.parse_args()


def register_markdown(platform: Platform, tenant: str, name: str, text: str) -> Registration:
    """A Markdown file registered for `tenant` as an API upload, its tenant's subject."""
    return register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant,
        origin=f"api:{name}",
        filename=name,
        data=text.encode(),
        subjects=[f"tenant:{tenant}"],
        media_type="text/markdown",
    )


def add_waiting_tenants(
    platform: Platform, model: str, tenants: int, files: int, existing: set[str]
) -> None:
    """`tenants` tenants (those not there yet), each with `files` files waiting
    for extraction."""
    for n in range(tenants):
        tenant = f"t{n:05d}"
        if tenant in existing:
            continue
        platform.catalog.ensure_tenant(tenant, tenant, model)
        for f in range(files):
            register_markdown(
                platform, tenant, f"{tenant}-{f}.md", f"# {tenant} {f}\n\nwaiting for extraction\n"
            )


def add_large_tenant(platform: Platform, model: str, tenant: str, paragraphs: int) -> None:
    """A tenant whose one file is extracted and chunked into about `paragraphs` chunks."""
    catalog = platform.catalog
    catalog.ensure_tenant(tenant, tenant, model)
    registered = register_markdown(platform, tenant, "large.md", "# Large\n\nmany chunks\n")
    version = catalog.versions_to_extract(tenant, 10)[0]
    assert catalog.claim_extraction(version.version_id)
    text = "\n\n".join(f"Paragraph {i} of the large tenant." for i in range(paragraphs))
    blocks = tuple(markdown_blocks(f"# Large\n\n{text}\n"))
    catalog.save_extraction(
        registered.version_id, ExtractedDocument("Large", "text/markdown", blocks)
    )
    [(record, extracted)] = catalog.versions_to_chunk(tenant, 1)
    chunks = chunk_blocks(
        extracted.blocks,
        tenant_id=tenant,
        source_id=record.source_id,
        version_id=record.version_id,
        policy=ChunkingPolicy(max_tokens=16),
    )
    catalog.replace_chunks(record, chunks)


def print_catalog_reads(catalog: Catalog) -> None:
    """A pending-work tick's catalog reads: the former two per tenant, and the one read."""
    tenants = catalog.list_tenants()

    def per_tenant_reads() -> None:
        for tenant in tenants:
            catalog.pending_work(tenant.tenant_id, tenant.active_model)
            catalog.counts(tenant.tenant_id)

    print(f"former tick reads (2 per tenant): {median_ms(per_tenant_reads):8.1f} ms")
    print(f"pending_work_all (one read):      {median_ms(catalog.pending_work_all):8.1f} ms")


def print_sensor_ticks(tenants: list[str]) -> None:
    """Whole ticks of each sensor, evaluated by Dagster on a scratch instance."""
    resource = GroundworkResource(database=DATABASE, index_prefix=PREFIX)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("tenant", tenants)
        for sensor in (pending_work_sensor, tenant_partitions_sensor, deletion_sensor):

            def tick(sensor: dg.SensorDefinition = sensor) -> object:
                context = dg.build_sensor_context(
                    instance=instance, resources={"groundwork": resource}
                )
                return sensor(context)

            print(f"{sensor.name + ' tick':34s}{median_ms(tick):8.1f} ms")


def main() -> int:
    args = parse_args()
    os.environ["GROUNDWORK_DATABASE_NAME"] = DATABASE
    settings = GroundworkSettings.from_env()
    platform = connect(settings, ensure_engines(settings), database=DATABASE, index_prefix=PREFIX)
    catalog = platform.catalog
    model = settings.default_model_key
    existing = {t.tenant_id for t in catalog.list_tenants()}
    started = time.perf_counter()
    add_waiting_tenants(platform, model, args.tenants, args.files, existing)
    large = "large"
    if large not in existing:
        add_large_tenant(platform, model, large, args.large_chunks)
    print(
        f"{args.tenants} tenants x {args.files} files waiting, one tenant with "
        f"{catalog.counts(large).chunks} chunks (set-up {time.perf_counter() - started:.0f} s)"
    )
    print_catalog_reads(catalog)
    print_sensor_ticks([t.tenant_id for t in catalog.list_tenants()])
    platform.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
