"""`groundwork key list|revoke|rotate`: an operator sees every key of a tenant
with its subjects and scopes (never a hash or secret), and a revoked key fails
authentication at once."""

from __future__ import annotations

import pytest

from groundwork_cli.main import main
from resources.composition.platform import Platform
from resources.postgres.catalog_parts.common import hash_secret


def _secret_from(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("gw_"))


def test_key_list_revoke_and_rotate_through_the_cli(
    cli_env: None, platform: Platform, tenant_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["key", "create", tenant_id, "--label", "reader", "--scope", "files:read"]) == 0
    reader_secret = _secret_from(capsys.readouterr().out)
    assert main(["key", "create", tenant_id, "--subject", "group:ops", "--label", "ops"]) == 0
    ops_secret = _secret_from(capsys.readouterr().out)
    reader = platform.catalog.principal_for_key(reader_secret)
    ops = platform.catalog.principal_for_key(ops_secret)
    assert reader is not None and ops is not None

    assert main(["key", "list", tenant_id]) == 0
    listing = capsys.readouterr().out
    assert reader.key_id in listing and ops.key_id in listing
    assert "files:read" in listing and "group:ops" in listing and "artifacts:write" in listing
    for secret in (reader_secret, ops_secret):
        assert secret not in listing and hash_secret(secret) not in listing

    assert main(["key", "revoke", tenant_id, reader.key_id]) == 0
    capsys.readouterr()
    assert platform.catalog.principal_for_key(reader_secret) is None
    assert platform.catalog.principal_for_key(ops_secret) is not None
    assert main(["key", "list", tenant_id]) == 0
    revoked_line = next(
        line for line in capsys.readouterr().out.splitlines() if reader.key_id in line
    )
    assert "revoked" in revoked_line

    # revoking again, or a key of another tenant, is refused
    assert main(["key", "revoke", tenant_id, reader.key_id]) == 1
    assert main(["key", "revoke", "t-no-such-tenant", ops.key_id]) == 1
    capsys.readouterr()

    assert main(["key", "rotate", tenant_id, ops.key_id]) == 0
    rotated_secret = _secret_from(capsys.readouterr().out)
    assert platform.catalog.principal_for_key(ops_secret) is None
    rotated = platform.catalog.principal_for_key(rotated_secret)
    assert rotated is not None and rotated.key_id != ops.key_id
    assert rotated.subjects == ops.subjects and rotated.scopes == ops.scopes
