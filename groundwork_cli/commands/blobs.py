"""`groundwork blobs migrate --to s3`: copy the filesystem blob store
(GROUNDWORK_HOME/blobs) into the S3 bucket the settings name (or the embedded
SeaweedFS), idempotently: run it again after an interruption, or after
switching GROUNDWORK_BLOB_BACKEND to s3, to copy what was written meanwhile
(docs/object-storage.md has the no-downtime order)."""

from __future__ import annotations

import argparse
from dataclasses import replace

from groundwork_cli.terminal import console
from resources.composition.settings import GroundworkSettings


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    blobs = subcommands.add_parser("blobs", help="move the file bytes between stores")
    actions = blobs.add_subparsers(dest="blobs_action", required=True)
    migrate = actions.add_parser(
        "migrate", help="copy the filesystem store into S3 (idempotent, resumable, verified)"
    )
    migrate.add_argument("--to", choices=["s3"], required=True, help="the target store")
    migrate.add_argument(
        "--verify",
        action="store_true",
        help="also re-read and check the SHA-256 of objects the bucket already holds",
    )
    migrate.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, Progress, TextColumn

    from groundwork.blob_migration import migrate_blobs
    from resources.blobs.filesystem import FilesystemBlobStore
    from resources.composition.blobs import build_blob_store, embedded_seaweedfs

    settings = replace(GroundworkSettings.from_env(), blob_backend="s3", blob_read_fallback="")
    endpoint = settings.s3_endpoint
    if endpoint is None:
        endpoint = embedded_seaweedfs(settings).start()
    source = FilesystemBlobStore(settings.blob_dir)
    target = build_blob_store(settings, endpoint)
    keys = sum(1 for _ in source.list_keys())
    console.print(f"copying {keys} blobs from {settings.blob_dir} to {target!r}")
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}")
    ) as progress:
        task = progress.add_task("blobs", total=keys)
        report = migrate_blobs(
            source,
            target,
            verify_existing=args.verify,
            on_key=lambda _key, _size: progress.advance(task),
        )
    console.print(
        f"copied {report.copied} ({report.bytes_copied / 2**20:.1f} MiB), "
        f"already there {report.skipped}, failed {len(report.failed)}"
    )
    for key, why in sorted(report.failed.items()):
        console.print(f"[red]{key}: {why}[/]")
    if report.failed:
        console.print("run it again to retry the failed keys")
    return 0 if report.complete else 1
