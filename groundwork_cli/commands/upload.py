"""`groundwork upload FILE --key KEY`: a resumable upload in parts through the API."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import httpx

from groundwork_cli.terminal import console
from resources.composition.settings import GroundworkSettings


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    upload = subcommands.add_parser("upload", help="upload a file (resumable, with a progress bar)")
    upload.add_argument("file", type=Path)
    upload.add_argument("--key", required=True)
    upload.add_argument(
        "--subject", action="append", help="who may read it (repeatable; default: the key's own)"
    )
    upload.add_argument("--api")
    upload.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Upload a file in parts with a progress bar; an interrupted upload resumes
    from the server's acknowledged offset when the same command runs again."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    settings = GroundworkSettings.from_env()
    api = args.api or f"http://127.0.0.1:{settings.api_port}"
    path: Path = args.file
    size = path.stat().st_size
    state_file = settings.home / "upload-state.json"
    state: dict[str, str] = json.loads(state_file.read_text()) if state_file.exists() else {}
    fingerprint = f"{path.resolve()}|{size}|{path.stat().st_mtime_ns}"
    headers = {"Authorization": f"Bearer {args.key}"}
    with httpx.Client(base_url=api, headers=headers, timeout=60) as client:
        upload_id = state.get(fingerprint)
        received = 0
        if upload_id:
            progress_response = client.get(f"/v1/uploads/{upload_id}")
            if progress_response.status_code == 200 and progress_response.json()["state"] == "open":
                received = progress_response.json()["received"]
                console.print(f"resuming {path.name} at byte {received}")
            else:
                upload_id = None
        if not upload_id:
            created = client.post(
                "/v1/uploads", json={"filename": path.name, "size": size, "subjects": args.subject}
            )
            if created.status_code != 201:
                console.print(f"[red]{created.json()['message']}[/]")
                return 1
            upload_id = created.json()["upload_id"]
            state[fingerprint] = upload_id
            settings.home.mkdir(parents=True, exist_ok=True)
            state_file.write_text(json.dumps(state))
        part = 4 * 1024 * 1024
        with Progress(
            "[bold]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn()
        ) as bar:
            task = bar.add_task(path.name, total=size, completed=received)
            with open(path, "rb") as handle:
                handle.seek(received)
                while received < size:
                    chunk = handle.read(part)
                    try:
                        response = client.put(
                            f"/v1/uploads/{upload_id}", params={"offset": received}, content=chunk
                        )
                    except httpx.HTTPError as exc:
                        console.print(
                            f"[red]interrupted ({exc}); run the same command again to resume[/]"
                        )
                        return 1
                    if response.status_code != 200:
                        console.print(f"[red]{response.json()['message']}[/]")
                        return 1
                    received = response.json()["received"]
                    handle.seek(received)
                    bar.update(task, completed=received)
        done = client.post(f"/v1/uploads/{upload_id}/complete")
        if done.status_code != 200:
            console.print(f"[red]{done.json()['message']}[/]")
            return 1
        state.pop(fingerprint, None)
        state_file.write_text(json.dumps(state))
        console.print(
            f"uploaded {path.name}: source {done.json()['source_id']}, version {done.json()['version_id']}"
        )
    return 0
