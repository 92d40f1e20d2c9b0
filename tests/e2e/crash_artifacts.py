"""Run by test_artifact_lifecycle in a subprocess: revises one artifact (an
append) and SIGKILLs itself at the named step of the write order: after the
document version is stored (`after-version`), after every role blob is staged
and before the commit (`before-commit`), or after the commit and before the
purge of the superseded blobs (`after-commit`)."""

from __future__ import annotations

import sys

from groundwork.artifact_edits import edit_from_dict
from groundwork.artifacts import Provenance, revise_artifact
from groundwork.ports import AccessScope
from resources.composition.platform import connect
from resources.composition.settings import GroundworkSettings
from tests.e2e.crash_registration import _DieAfter


class _DieBefore(_DieAfter):
    def __getattr__(self, name: str) -> object:
        import os
        import signal

        if name == self._method:
            os.kill(os.getpid(), signal.SIGKILL)
        return getattr(self._inner, name)


def main() -> None:
    step, database, tenant, artifact_id = sys.argv[1:5]
    platform = connect(GroundworkSettings.from_env(), database=database)
    catalog: object = platform.catalog
    store: object = platform.artifacts
    if step == "after-version":
        catalog = _DieAfter(platform.catalog, "mark_stored")
    elif step == "before-commit":
        store = _DieBefore(platform.artifacts, "commit_version")
    elif step == "after-commit":
        store = _DieAfter(platform.artifacts, "commit_version")
    revise_artifact(
        catalog,  # type: ignore[arg-type]
        platform.blobs,
        store,  # type: ignore[arg-type]
        AccessScope(tenant, (f"tenant:{tenant}",)),
        artifact_id,
        expected_generation=1,
        provenance=Provenance("crash-test", {}, f"crash-{step}"),
        edits=[edit_from_dict({"op": "append", "text": f"Written by the {step} writer."})],
    )


if __name__ == "__main__":
    main()
