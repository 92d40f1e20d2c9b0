"""The tenants-and-keys service's rules, on the in-memory TenantDirectory (the
conformance suite proves it behaves as the PostgreSQL adapter does)."""

from __future__ import annotations

import pytest

from groundwork.errors import Refused
from groundwork.ports import DEFAULT_KEY_SCOPES
from groundwork.services import tenants
from tests.fakes import InMemoryTenantDirectory


@pytest.fixture
def directory() -> InMemoryTenantDirectory:
    found = InMemoryTenantDirectory()
    tenants.create_tenant(found, "acme", "Acme", "model_a")
    return found


@pytest.mark.parametrize("bad", ["Acme", "a b", "../etc", "-x", "", "x" * 64])
def test_a_tenant_id_must_be_a_safe_folder_and_partition_name(bad: str) -> None:
    with pytest.raises(Refused) as refused:
        tenants.create_tenant(InMemoryTenantDirectory(), bad, bad, "model_a")
    assert refused.value.code == "invalid"


def test_a_key_defaults_to_the_whole_tenant_and_the_default_scopes(
    directory: InMemoryTenantDirectory,
) -> None:
    issued = tenants.issue_key(directory, "acme", None, "ci", None)
    assert issued.subjects == ("tenant:acme",)
    assert issued.scopes == DEFAULT_KEY_SCOPES
    principal = directory.principal_for_key(issued.secret)
    assert principal is not None and principal.scopes == issued.scopes


@pytest.mark.parametrize(
    ("subjects", "scopes"),
    [
        (["finance"], None),  # not kind:value
        (["group:a b"], None),
        (None, ["files:everything"]),
        (None, ["FILES:READ"]),
    ],
)
def test_unknown_scopes_and_malformed_subjects_are_refused(
    directory: InMemoryTenantDirectory, subjects: list[str] | None, scopes: list[str] | None
) -> None:
    with pytest.raises(Refused) as refused:
        tenants.issue_key(directory, "acme", subjects, "", scopes)
    assert refused.value.code == "invalid" and refused.value.alternative
    assert directory.list_api_keys("acme") == []


def test_no_key_for_a_tenant_that_does_not_exist(directory: InMemoryTenantDirectory) -> None:
    with pytest.raises(Refused) as refused:
        tenants.issue_key(directory, "globex", None, "", None)
    assert refused.value.code == "not_found"


def test_rotation_keeps_the_grant_and_another_tenant_cannot_touch_the_key(
    directory: InMemoryTenantDirectory,
) -> None:
    tenants.create_tenant(directory, "globex", "Globex", "model_a")
    issued = tenants.issue_key(directory, "acme", ["group:ops"], "ops", ["files:read"])
    with pytest.raises(Refused):
        tenants.revoke_key(directory, "globex", issued.key_id)
    rotated = tenants.rotate_key(directory, "acme", issued.key_id)
    assert (rotated.subjects, rotated.scopes) == (("group:ops",), ("files:read",))
    assert directory.principal_for_key(issued.secret) is None
    with pytest.raises(Refused) as refused:
        tenants.rotate_key(directory, "acme", issued.key_id)
    assert refused.value.code == "not_found"
