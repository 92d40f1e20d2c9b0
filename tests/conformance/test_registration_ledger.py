"""RegistrationLedger conformance (the catalog's registration part): the
contract in groundwork.catalog, run against the PostgreSQL adapter and the
in-memory fake.

The contract: a version row is `pending` before its bytes and becomes the
source's current version only by the compare-and-set to `stored` (a
quarantined one never does); the same bytes as the current version are
Unchanged; other bytes for an existing source need approval when the caller
did not give it; concurrent registrations of one origin get distinct version
numbers; a source of another kind (an artifact) is not changed through here."""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Iterator

import pytest

from groundwork.catalog import NeedsApproval, PendingVersion, RegistrationLedger, Unchanged
from groundwork.errors import InvalidRequest
from groundwork.stages.registration import blob_key_for
from resources.composition.platform import Platform
from tests.fakes import InMemoryRegistrationLedger
from tests.fakes_catalog import InMemoryPipelineCatalog


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class RegistrationContract:
    @pytest.fixture
    def ledger(self) -> Iterator[RegistrationLedger]:
        raise NotImplementedError

    @pytest.fixture
    def tenant(self) -> str:
        return f"rl-{uuid.uuid4().hex[:10]}"

    @staticmethod
    def _begin(
        ledger: RegistrationLedger,
        tenant: str,
        origin: str,
        text: str,
        replace: bool = True,
        doc_type: str = "file",
    ) -> PendingVersion | Unchanged | NeedsApproval:
        return ledger.begin_version(
            tenant,
            origin,
            origin.rsplit(":", 1)[-1],
            ("team:a",),
            _sha(text),
            len(text),
            "text/markdown",
            replace=replace,
            doc_type=doc_type,
        )

    def test_a_version_is_current_only_once_stored(
        self, ledger: RegistrationLedger, tenant: str
    ) -> None:
        first = self._begin(ledger, tenant, "inbox:a.md", "one")
        assert isinstance(first, PendingVersion) and first.is_new_source
        assert first.blob_key == blob_key_for(_sha("one"))
        # not stored yet: the same bytes are not "unchanged", they are pending again
        again = self._begin(ledger, tenant, "inbox:a.md", "one")
        assert isinstance(again, PendingVersion) and not again.is_new_source
        assert ledger.mark_stored(first.version_id) is True
        assert ledger.mark_stored(first.version_id) is False  # compare-and-set
        assert self._begin(ledger, tenant, "inbox:a.md", "one") == Unchanged(
            first.source_id, first.version_id
        )

    def test_other_bytes_need_approval_unless_given(
        self, ledger: RegistrationLedger, tenant: str
    ) -> None:
        first = self._begin(ledger, tenant, "api:policy.md", "v1")
        assert isinstance(first, PendingVersion) and ledger.mark_stored(first.version_id)
        asked = self._begin(ledger, tenant, "api:policy.md", "v2", replace=False)
        assert asked == NeedsApproval(first.source_id, first.version_id, 1)
        given = self._begin(ledger, tenant, "api:policy.md", "v2", replace=True)
        assert isinstance(given, PendingVersion) and given.source_id == first.source_id

    def test_a_quarantined_version_never_becomes_current(
        self, ledger: RegistrationLedger, tenant: str
    ) -> None:
        clean = self._begin(ledger, tenant, "inbox:b.md", "clean")
        assert isinstance(clean, PendingVersion) and ledger.mark_stored(clean.version_id)
        bad = self._begin(ledger, tenant, "inbox:b.md", "infected")
        assert isinstance(bad, PendingVersion)
        assert ledger.mark_quarantined(bad.version_id, "Eicar-Signature") is True
        assert ledger.mark_stored(bad.version_id) is False
        assert ledger.mark_quarantined(bad.version_id, "again") is False
        assert self._begin(ledger, tenant, "inbox:b.md", "clean") == Unchanged(
            clean.source_id, clean.version_id
        )

    def test_concurrent_registrations_of_one_origin_are_serialized(
        self, ledger: RegistrationLedger, tenant: str
    ) -> None:
        first = self._begin(ledger, tenant, "inbox:c.md", "base")
        assert isinstance(first, PendingVersion) and ledger.mark_stored(first.version_id)
        outcomes: list[PendingVersion | Unchanged | NeedsApproval] = []
        barrier = threading.Barrier(6)

        def register(n: int) -> None:
            barrier.wait()
            outcomes.append(self._begin(ledger, tenant, "inbox:c.md", f"edit {n}"))

        threads = [threading.Thread(target=register, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert all(isinstance(o, PendingVersion) for o in outcomes)
        assert len({o.source_id for o in outcomes}) == 1
        assert len({o.version_id for o in outcomes}) == 6

    def test_an_artifact_is_not_changed_through_registration(
        self, ledger: RegistrationLedger, tenant: str
    ) -> None:
        made = self._begin(ledger, tenant, "artifact:r.md", "# R", doc_type="artifact")
        assert isinstance(made, PendingVersion)
        with pytest.raises(InvalidRequest):
            self._begin(ledger, tenant, "artifact:r.md", "# R2")


class TestPostgresRegistrationLedger(RegistrationContract):
    @pytest.fixture
    def ledger(self, platform: Platform, tenant: str) -> Iterator[RegistrationLedger]:
        platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
        yield platform.catalog


class TestInMemoryRegistrationLedger(RegistrationContract):
    @pytest.fixture
    def ledger(self) -> Iterator[RegistrationLedger]:
        yield InMemoryRegistrationLedger()


class TestInMemoryPipelineCatalogAsRegistrationLedger(RegistrationContract):
    """The pipeline catalog fake extends the registration fake (deletion states,
    stage records) and must stay faithful to it."""

    @pytest.fixture
    def ledger(self) -> Iterator[RegistrationLedger]:
        yield InMemoryPipelineCatalog()
