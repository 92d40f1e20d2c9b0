"""The inbox folder as the fsspec connector: a tenant's `<inbox>/<tenant>`
on the local filesystem, permissions from its `.subjects` files.

Built from the platform's settings each time (never from the stored
instance's configuration, which only shows where the folder was), so moving
the home moves the inbox with it.
"""

from __future__ import annotations

from pathlib import Path

from groundwork.connectors.inbox import SUBJECTS_FILE, Fingerprint, default_subjects
from groundwork.connectors.port import ConnectorError
from resources.connectors.fsspec_files import FsspecConnector


def inbox_connector(root: Path, tenant_id: str) -> FsspecConnector:
    return FsspecConnector("file", str(root / tenant_id), subjects_file=SUBJECTS_FILE)


def inbox_fingerprint(root: Path, tenant_id: str) -> str:
    """The folder as a pass would list it (items, versions, subjects): equal
    to the fingerprint the tenant's last pass recorded when nothing changed.
    A stat walk: no file is read but the `.subjects` markers."""
    walk = Fingerprint()
    subjects = default_subjects(tenant_id)
    try:
        for page in inbox_connector(root, tenant_id).list_pages(None):
            for item in page.items:
                walk.add(item.item_id, item.version, tuple(sorted(set(item.subjects or subjects))))
    except ConnectorError:
        pass  # no folder: the fingerprint of nothing
    return walk.value
