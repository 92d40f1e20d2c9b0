"""The system corpus's rules, pure (issue #35): who reads it and under which
subjects (groundwork.services.tenant_wall), who writes it (scopes), and that
its tenant id is reserved (tenants). The engines' half is
tests/e2e/test_system_corpus.py and the index and reader conformance suites."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from groundwork.catalog import Tenant
from groundwork.errors import Forbidden, Refused
from groundwork.ports import SYSTEM_TENANT, AccessScope, Principal, SystemReading
from groundwork.services import scopes, tenant_wall, tenants
from tests.fakes import InMemoryTenantDirectory

MODEL = "bge_small_en_v15_q"


def _reader(tenant_id: str = "acme", subjects: tuple[str, ...] = ("tenant:acme",)) -> Principal:
    return Principal(tenant_id, subjects, key_id="key_1")


def test_a_tenant_reads_the_system_corpus_under_its_readers_subject_and_its_own() -> None:
    scope = tenant_wall.reading_scope(_reader(), Tenant("acme", "Acme", MODEL))
    assert scope.tenant_id == "acme" and scope.subjects == ("tenant:acme",)
    assert scope.system == SystemReading(SYSTEM_TENANT, ("tenant:system", "tenant:acme"))
    assert scope.readable_owners() == (
        ("acme", ("tenant:acme",)),
        (SYSTEM_TENANT, ("tenant:system", "tenant:acme")),
    )
    assert scope.corpus_of(SYSTEM_TENANT) == "system" and scope.corpus_of("acme") == "tenant"


@pytest.mark.parametrize(
    ("who", "tenant"),
    [
        (_reader(), Tenant("acme", "Acme", MODEL, system_corpus=False)),  # switched off
        (_reader(), None),  # tenant unknown: its own rows only
        (_reader(subjects=()), Tenant("acme", "Acme", MODEL)),  # a key that reads nothing
        (_reader(SYSTEM_TENANT, ("tenant:system",)), Tenant(SYSTEM_TENANT, "s", MODEL)),
    ],
)
def test_no_system_reading_when_off_unknown_empty_or_the_owner_itself(
    who: Principal, tenant: Tenant | None
) -> None:
    scope = tenant_wall.reading_scope(who, tenant)
    assert scope.system is None
    assert scope.readable_owners() == ((who.tenant_id, who.subjects),)


def test_another_tenants_settings_are_never_applied() -> None:
    with pytest.raises(ValueError):
        tenant_wall.reading_scope(_reader(), Tenant("other", "Other", MODEL))


def test_a_system_reading_without_subjects_or_of_the_tenant_itself_adds_no_owner() -> None:
    assert AccessScope("a", ("x:y",), SystemReading("s", ())).readable_owners() == (
        ("a", ("x:y",)),
    )
    assert AccessScope("a", ("x:y",), SystemReading("a", ("z:w",))).readable_owners() == (
        ("a", ("x:y",)),
    )


WRITES = ["sources.register", "uploads", "sources.delete", "sources.subjects", "artifacts.write"]


@pytest.mark.parametrize("operation", WRITES)
def test_a_system_tenant_key_writes_only_with_system_admin(operation: str) -> None:
    every = tuple(s for s in scopes.ALL_SCOPES if s != "system:admin")
    plain = Principal(SYSTEM_TENANT, ("tenant:system",), scopes=every)
    with pytest.raises(Forbidden) as refused:
        scopes.require(plain, operation)
    assert refused.value.details == {"needed_scope": "system:admin"}
    scopes.require(
        Principal(SYSTEM_TENANT, ("tenant:system",), scopes=(*every, "system:admin")), operation
    )
    # an ordinary tenant's key needs nothing more
    scopes.require(Principal("acme", ("tenant:acme",), scopes=every), operation)


def test_a_system_tenant_key_reads_without_system_admin() -> None:
    scopes.require(Principal(SYSTEM_TENANT, ("tenant:system",), scopes=("files:read",)), "search")


def test_the_system_id_is_reserved_and_system_admin_is_its_keys_alone() -> None:
    directory = InMemoryTenantDirectory()
    with pytest.raises(Refused) as reserved:
        tenants.create_tenant(directory, SYSTEM_TENANT, "mine", MODEL)
    assert reserved.value.code == "reserved"
    assert directory.get_tenant(SYSTEM_TENANT) is None
    tenants.create_system_tenant(directory, MODEL)
    tenants.create_tenant(directory, "acme", "Acme", MODEL)
    with pytest.raises(Refused):
        tenants.issue_key(directory, "acme", None, "x", ["files:read", "system:admin"])
    issued = tenants.issue_key(directory, SYSTEM_TENANT, None, "x", ["files:write", "system:admin"])
    assert issued.subjects == ("tenant:system",)  # what its documents are read under


@dataclass
class _Ports:
    catalog: InMemoryTenantDirectory


def test_the_switch_is_a_tenants_own_and_the_owner_has_none() -> None:
    directory = InMemoryTenantDirectory()
    ports = _Ports(directory)
    tenants.create_system_tenant(directory, MODEL)
    tenants.create_tenant(directory, "acme", "Acme", MODEL)
    assert tenant_wall.system_corpus_enabled(ports, "acme") is True
    assert tenant_wall.set_system_corpus(ports, "acme", False) is False
    assert tenant_wall.caller_scope(directory, _reader()).system is None
    tenant_wall.set_system_corpus(ports, "acme", True)
    assert tenant_wall.caller_scope(directory, _reader()).system is not None
    with pytest.raises(Refused) as owner:
        tenant_wall.set_system_corpus(ports, SYSTEM_TENANT, False)
    assert owner.value.code == "invalid"
    with pytest.raises(Refused) as unknown:
        tenant_wall.system_corpus_enabled(ports, "nobody")
    assert unknown.value.code == "not_found"


def test_an_empty_system_corpus_is_not_read() -> None:
    """Issue #33: a tenant reads the system corpus by default, and one that
    holds nothing cost every search a second arm in the vector leg (planned
    each time) and an owner in the keyword and re-check filters."""
    tenant = Tenant("acme", "Acme", MODEL, system_corpus_holds_documents=False)
    scope = tenant_wall.reading_scope(_reader(), tenant)
    assert scope.system is None
    assert scope.readable_owners() == (("acme", ("tenant:acme",)),)
