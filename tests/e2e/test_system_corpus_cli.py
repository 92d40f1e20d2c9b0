"""`groundwork tenant create-system|system-corpus` and `groundwork key create
system --scope system:admin` (issue #35): the CLI maps to the tenants and
tenant-wall services, on a database of its own (the system tenant is one per
database; see test_system_corpus.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from groundwork.ports import SYSTEM_TENANT
from groundwork_cli.main import main
from resources.composition.platform import EngineEndpoints, Platform, connect
from resources.composition.settings import GroundworkSettings
from tests.e2e.test_system_corpus import SYSTEM_DATABASE


@pytest.fixture
def system_platform(
    monkeypatch: pytest.MonkeyPatch, settings: GroundworkSettings, engines: EngineEndpoints
) -> Iterator[Platform]:
    prefix = f"gwsyscli-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("GROUNDWORK_DATABASE_NAME", SYSTEM_DATABASE)
    monkeypatch.setenv("GROUNDWORK_INDEX_PREFIX", prefix)
    platform = connect(settings, engines, database=SYSTEM_DATABASE, index_prefix=prefix)
    yield platform
    platform.close()


def test_the_switch_and_the_system_tenant_through_the_cli(
    system_platform: Platform, capsys: pytest.CaptureFixture[str]
) -> None:
    tenant = f"cli-{uuid.uuid4().hex[:8]}"
    assert main(["tenant", "create", tenant]) == 0
    assert main(["tenant", "system-corpus", tenant]) == 0
    assert f"{tenant} reads the system corpus: on" in capsys.readouterr().out
    assert main(["tenant", "system-corpus", tenant, "--off"]) == 0
    assert "system corpus: off" in capsys.readouterr().out
    found = system_platform.catalog.get_tenant(tenant)
    assert found is not None and found.system_corpus is False
    assert main(["tenant", "system-corpus", tenant, "--on"]) == 0
    found = system_platform.catalog.get_tenant(tenant)
    assert found is not None and found.system_corpus is True

    # the reserved id: refused as an ordinary tenant, made by create-system
    assert main(["tenant", "create", SYSTEM_TENANT]) == 1
    assert "reserved for the shared system corpus" in capsys.readouterr().out
    assert main(["tenant", "create-system"]) == 0
    assert "owns the system corpus" in capsys.readouterr().out
    assert main(["tenant", "system-corpus", SYSTEM_TENANT, "--off"]) == 1
    assert main(["tenant", "system-corpus"]) == 2  # no tenant named
    capsys.readouterr()

    # system:admin only on the system tenant's keys
    assert main(["key", "create", tenant, "--scope", "files:read", "--scope", "system:admin"]) == 1
    assert (
        main(["key", "create", SYSTEM_TENANT, "--scope", "files:write", "--scope", "system:admin"])
        == 0
    )
    assert "system:admin" in capsys.readouterr().out
