"""TenantDirectory conformance (the catalog's tenants-and-keys part): the
contract in groundwork.catalog, run against the PostgreSQL adapter and the
in-memory fake.

The contract: `ensure_tenant` is idempotent and never changes an existing
tenant; a key's secret authenticates to exactly its tenant, subjects and
scopes and is never listed (nor its hash); revocation holds from the next
authentication; rotation revokes and re-issues with the same subjects,
scopes and label in one step; another tenant's key cannot be revoked or
rotated through this tenant."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from groundwork.catalog import TenantDirectory
from groundwork.errors import InvalidRequest, StoreError
from groundwork.retrieval.kernel import FusionConstants
from resources.composition.platform import Platform
from tests.fakes import InMemoryTenantDirectory
from tests.fakes_catalog import InMemoryPipelineCatalog


class TenantDirectoryContract:
    @pytest.fixture
    def directory(self) -> Iterator[TenantDirectory]:
        raise NotImplementedError

    @staticmethod
    def _tenant() -> str:
        return f"td-{uuid.uuid4().hex[:10]}"

    def test_ensuring_a_tenant_is_idempotent_and_keeps_the_first(
        self, directory: TenantDirectory
    ) -> None:
        tenant = self._tenant()
        first = directory.ensure_tenant(tenant, "First name", "model_a")
        again = directory.ensure_tenant(tenant, "Other name", "model_b")
        assert first == again == directory.get_tenant(tenant)
        assert (again.display_name, again.active_model) == ("First name", "model_a")
        assert tenant in {t.tenant_id for t in directory.list_tenants()}
        assert directory.get_tenant(self._tenant()) is None

    def test_fusion_constants_are_kept_per_tenant_and_bounded(
        self, directory: TenantDirectory
    ) -> None:
        tenant, other = self._tenant(), self._tenant()
        directory.ensure_tenant(tenant, "Tuned", "model_a")
        directory.ensure_tenant(other, "Untuned", "model_a")
        assert directory.get_tenant(tenant).fusion is None  # type: ignore[union-attr]
        tuned = FusionConstants(rrf_k=2, keyword_weight=1.25, depth=50, model_key="model-a")
        assert directory.set_fusion(tenant, tuned) is True
        assert directory.get_tenant(tenant).fusion == tuned  # type: ignore[union-attr]
        assert directory.get_tenant(other).fusion is None  # type: ignore[union-attr]
        listed = {t.tenant_id: t.fusion for t in directory.list_tenants()}
        assert listed[tenant] == tuned and listed[other] is None
        with pytest.raises(InvalidRequest):
            directory.set_fusion(tenant, FusionConstants(rrf_k=0, keyword_weight=1.0, depth=50))
        assert directory.get_tenant(tenant).fusion == tuned  # type: ignore[union-attr]
        assert directory.set_fusion(tenant, None) is True
        assert directory.get_tenant(tenant).fusion is None  # type: ignore[union-attr]
        assert directory.set_fusion(self._tenant(), tuned) is False

    def test_drilldown_calls_are_counted_per_key_and_turn_up_to_the_cap(
        self, directory: TenantDirectory
    ) -> None:
        tenant = self._tenant()
        directory.ensure_tenant(tenant, tenant, "model_a")
        key, _ = directory.create_api_key(tenant, [f"tenant:{tenant}"], "counted")
        other, _ = directory.create_api_key(tenant, [f"tenant:{tenant}"], "other")
        counts = [directory.count_drilldown(tenant, key, "turn-1", 3, 900) for _ in range(4)]
        assert counts == [1, 2, 3, None]
        assert directory.count_drilldown(tenant, key, "turn-2", 3, 900) == 1
        assert directory.count_drilldown(tenant, other, "turn-1", 3, 900) == 1
        assert directory.count_drilldown(tenant, key, "turn-1", 3, 900) is None

    def test_a_drilldown_window_that_ended_counts_from_zero(
        self, directory: TenantDirectory
    ) -> None:
        tenant = self._tenant()
        directory.ensure_tenant(tenant, tenant, "model_a")
        key, _ = directory.create_api_key(tenant, [f"tenant:{tenant}"], "window")
        assert [directory.count_drilldown(tenant, key, "", 1, 1) for _ in range(2)] == [1, None]
        time.sleep(1.2)
        assert directory.count_drilldown(tenant, key, "", 1, 1) == 1

    def test_concurrent_drilldowns_never_pass_the_cap(self, directory: TenantDirectory) -> None:
        """Every process (HTTP workers, the MCP server) counts in one place."""
        tenant = self._tenant()
        directory.ensure_tenant(tenant, tenant, "model_a")
        key, _ = directory.create_api_key(tenant, [f"tenant:{tenant}"], "race")
        with ThreadPoolExecutor(8) as pool:
            counted = list(
                pool.map(lambda _: directory.count_drilldown(tenant, key, "t", 20, 900), range(64))
            )
        assert sorted(c for c in counted if c is not None) == list(range(1, 21))

    def test_a_secret_authenticates_to_exactly_its_grant(self, directory: TenantDirectory) -> None:
        tenant = self._tenant()
        directory.ensure_tenant(tenant, tenant, "model_a")
        key_id, secret = directory.create_api_key(
            tenant, ["team:a", "user:ann"], "ann's laptop", ["files:read"]
        )
        principal = directory.principal_for_key(secret)
        assert principal is not None
        assert (principal.tenant_id, principal.subjects, principal.key_id, principal.scopes) == (
            tenant,
            ("team:a", "user:ann"),
            key_id,
            ("files:read",),
        )
        assert directory.principal_for_key(secret + "x") is None
        listed = directory.list_api_keys(tenant)
        assert [(k.key_id, k.label, k.revoked_at) for k in listed] == [
            (key_id, "ann's laptop", None)
        ]
        assert secret not in repr(listed)

    def test_authentication_reads_the_key_and_its_tenant_together(
        self, directory: TenantDirectory
    ) -> None:
        """One read for a request: the principal, and its tenant's serving
        settings as they are now (a change shows at the next authentication)."""
        tenant = self._tenant()
        directory.ensure_tenant(tenant, "Reader's", "model_a")
        key_id, secret = directory.create_api_key(tenant, ["team:a"], "k", ["files:read"])
        found = directory.authenticate(secret)
        assert found is not None
        assert found.principal == directory.principal_for_key(secret)
        assert found.tenant == directory.get_tenant(tenant)
        tuned = FusionConstants(rrf_k=3, keyword_weight=0.75, depth=50, model_key="model_a")
        directory.set_fusion(tenant, tuned)
        again = directory.authenticate(secret)
        assert again is not None and again.tenant.fusion == tuned
        assert directory.authenticate(secret + "x") is None
        directory.revoke_api_key(tenant, key_id)
        assert directory.authenticate(secret) is None

    def test_a_scope_outside_the_catalogue_is_never_stored(
        self, directory: TenantDirectory
    ) -> None:
        """The service refuses it first (InvalidRequest); the store refuses it
        too, so no path can grant it (PostgreSQL: api_keys_scopes_check)."""
        tenant = self._tenant()
        directory.ensure_tenant(tenant, tenant, "model_a")
        with pytest.raises(StoreError):
            directory.create_api_key(tenant, ["team:a"], "k", ["files:read", "search"])
        assert directory.list_api_keys(tenant) == []

    def test_revocation_holds_from_the_next_authentication(
        self, directory: TenantDirectory
    ) -> None:
        tenant, other = self._tenant(), self._tenant()
        for t in (tenant, other):
            directory.ensure_tenant(t, t, "model_a")
        key_id, secret = directory.create_api_key(tenant, ["team:a"], "k")
        assert directory.revoke_api_key(other, key_id) is False  # not through another tenant
        assert directory.principal_for_key(secret) is not None
        assert directory.revoke_api_key(tenant, key_id) is True
        assert directory.principal_for_key(secret) is None
        assert directory.revoke_api_key(tenant, key_id) is False  # already revoked
        assert directory.list_api_keys(tenant)[0].revoked_at is not None

    def test_rotation_reissues_the_same_grant_and_retires_the_old_secret(
        self, directory: TenantDirectory
    ) -> None:
        tenant, other = self._tenant(), self._tenant()
        for t in (tenant, other):
            directory.ensure_tenant(t, t, "model_a")
        key_id, secret = directory.create_api_key(
            tenant, ["team:a"], "ci", ["files:read", "files:write"]
        )
        assert directory.rotate_api_key(other, key_id) is None
        rotated = directory.rotate_api_key(tenant, key_id)
        assert rotated is not None
        new_id, new_secret = rotated
        assert new_id != key_id and new_secret != secret
        assert directory.principal_for_key(secret) is None
        principal = directory.principal_for_key(new_secret)
        assert principal is not None
        assert (principal.subjects, principal.scopes) == (
            ("team:a",),
            ("files:read", "files:write"),
        )
        assert {k.key_id: k.label for k in directory.list_api_keys(tenant)} == {
            key_id: "ci",
            new_id: "ci",
        }
        assert directory.rotate_api_key(tenant, key_id) is None  # a revoked key is not rotated


class TestPostgresTenantDirectory(TenantDirectoryContract):
    @pytest.fixture
    def directory(self, platform: Platform) -> Iterator[TenantDirectory]:
        yield platform.catalog


class TestInMemoryTenantDirectory(TenantDirectoryContract):
    @pytest.fixture
    def directory(self) -> Iterator[TenantDirectory]:
        yield InMemoryTenantDirectory()


class TestInMemoryPipelineCatalogAsTenantDirectory(TenantDirectoryContract):
    """The pipeline catalog fake inherits the directory and must stay faithful to it."""

    @pytest.fixture
    def directory(self) -> Iterator[TenantDirectory]:
        yield InMemoryPipelineCatalog()
