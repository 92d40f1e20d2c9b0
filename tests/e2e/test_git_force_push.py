"""A force-pushed branch (issue #34): the last pass's commit gone from the
repository, or no longer an ancestor of the branch, does not stop the pass.
It lists the new head's whole tree, compared with the known items in the
catalog's one statement per page: an unchanged blob is not read again, a
changed one is registered, a vanished path tombstoned and unsearchable; the
state of the connector says that it happened. A local bare repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundwork.connectors.git import GitRepositoryConfig
from groundwork.connectors.selection import ItemSelection
from groundwork.services.connectors import connector
from resources.composition.platform import Platform
from resources.connectors.git_repository import GitRepositoryConnector
from resources.connectors.ports import ConnectorPlatform
from testbed.git_repository import BareRepository
from tests.e2e.test_web_and_git_connectors import Mirror


@pytest.mark.parametrize("prune", [True, False], ids=["old-commit-gone", "not-an-ancestor"])
def test_a_force_push_is_a_full_listing_not_an_error(
    platform: Platform, tenant_id: str, tmp_path: Path, prune: bool
) -> None:
    repo = BareRepository(tmp_path)
    repo.write("leave.md", "# Leave\n\nEmployees receive 27 vacation days.\n")
    repo.write("parking.md", "# Parking\n\nVisitors park on level P2.\n")
    repo.write("canteen.md", "# Canteen\n\nThe canteen serves lunch from noon.\n")
    repo.commit("three pages")
    config = GitRepositoryConfig(str(repo.bare), selection=ItemSelection(include=("*.md",)))
    mirror = Mirror(platform, tenant_id, "git", GitRepositoryConnector(config))
    first = mirror.sync()
    assert first.changed == 3
    assert mirror.hits("when does the canteen serve lunch", "noon")

    head = repo.rewrite_history(
        {
            "leave.md": "# Leave\n\nEmployees receive 27 vacation days.\n",  # the same blob
            "parking.md": "# Parking\n\nVisitors park on level P4.\n",
            "bikes.md": "# Bikes\n\nBicycles go in the courtyard racks.\n",
        },
        prune,
    )
    rewritten = mirror.sync()
    assert rewritten.finished and not rewritten.errors
    assert (rewritten.seen, rewritten.changed, rewritten.deleted) == (3, 2, 1)
    assert rewritten.reads == 2, "the unchanged blob is not read again"
    assert not mirror.hits("when does the canteen serve lunch", "noon"), "vanished: unsearchable"
    assert mirror.hits("where do visitors park", "P4")
    assert mirror.hits("where do bicycles go", "courtyard")
    assert mirror.hits("how many vacation days", "27 vacation days")

    view = connector(
        ConnectorPlatform(platform.for_tenant(tenant_id)), tenant_id, mirror.instance.instance_id
    ).to_dict()
    assert view["last_error"] is None and not view["behind"]
    (note,) = view["notes"]
    assert "history rewritten" in note and head[:12] in note

    # the next pass diffs from the new head again, and says nothing more
    repo.put("bikes.md", "# Bikes\n\nBicycles go in the basement.\n")
    after = mirror.sync()
    assert (after.seen, after.changed, after.deleted) == (1, 1, 0)
    view = connector(
        ConnectorPlatform(platform.for_tenant(tenant_id)), tenant_id, mirror.instance.instance_id
    ).to_dict()
    assert view["notes"] == []
