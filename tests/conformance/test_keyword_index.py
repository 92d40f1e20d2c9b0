"""KeywordIndex conformance: the contract in groundwork.ports.KeywordIndex,
run against every adapter (OpenSearch BM25, PostgreSQL full-text)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from groundwork.ports import AccessScope, IndexedChunk, KeywordIndex, SearchFilters, SystemReading
from resources.composition.platform import Platform
from testbed.index_records import chunk, new_tenant

SCOPE_SUBJECTS = ("team:a",)


class KeywordIndexContract:
    @pytest.fixture
    def index(self) -> KeywordIndex:
        raise NotImplementedError

    def _publish(self, index: KeywordIndex, chunks: list[IndexedChunk]) -> None:
        index.upsert(chunks)
        index.set_versions_live(chunks[0].tenant_id, sorted({c.version_id for c in chunks}), True)

    def test_is_the_port(self, index: KeywordIndex) -> None:
        assert isinstance(index, KeywordIndex)

    def test_finds_matching_text_best_first(self, index: KeywordIndex) -> None:
        tenant = new_tenant()
        docs = [
            chunk(tenant, "Replica lag fires when a read replica falls behind the primary."),
            chunk(tenant, "Vacation days: employees receive 25 days per year."),
            chunk(tenant, "The replica of the painting hangs in the lobby."),
        ]
        self._publish(index, docs)
        hits = index.search(AccessScope(tenant, SCOPE_SUBJECTS), "replica lag primary", 10)
        assert hits[0].chunk_id == docs[0].chunk_id
        assert docs[1].chunk_id not in {h.chunk_id for h in hits}
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    def test_identifiers_match_as_whole_tokens(self, index: KeywordIndex) -> None:
        tenant = new_tenant()
        exact = chunk(tenant, "ERR-4021 means the quota is exceeded.")
        parts = chunk(tenant, "An error occurred: code 4021 from the err subsystem, twice err err.")
        quarter = chunk(tenant, "Revenue in Q3-2026 rose to 16.2M.")
        self._publish(index, [exact, parts, quarter])
        scope = AccessScope(tenant, SCOPE_SUBJECTS)
        assert index.search(scope, "ERR-4021", 5)[0].chunk_id == exact.chunk_id
        assert index.search(scope, "Q3-2026", 5)[0].chunk_id == quarter.chunk_id

    def test_quoted_phrases_match_as_phrases(self, index: KeywordIndex) -> None:
        """Words in quotes must appear together, in that order; the words
        outside quotes still rank (issue 20's defect: quotes were ignored)."""
        tenant = new_tenant()
        in_order = chunk(tenant, "The storage quota policy applies to every team.")
        shuffled = chunk(tenant, "A quota for storage is set by policy.")
        ident = chunk(tenant, "Q3-2026 revenue grew in every region.")
        ident_apart = chunk(tenant, "Revenue was flat before Q3-2026 began.")
        self._publish(index, [in_order, shuffled, ident, ident_apart])
        scope = AccessScope(tenant, SCOPE_SUBJECTS)

        def ids(query: str) -> set[str]:
            return {h.chunk_id for h in index.search(scope, query, 10)}

        assert ids('"storage quota"') == {in_order.chunk_id}
        assert ids('"storage quota" policy') == {in_order.chunk_id}
        assert ids('"Q3-2026 revenue"') == {ident.chunk_id}
        assert ids('"quota storage"') == set()
        # without quotes the same words match either order
        assert ids("storage quota") >= {in_order.chunk_id, shuffled.chunk_id}

    def test_stopwords_stay_in_the_index(self, index: KeywordIndex) -> None:
        tenant = new_tenant()
        doc = chunk(tenant, "To be or not to be")
        self._publish(index, [doc])
        assert [
            h.chunk_id for h in index.search(AccessScope(tenant, SCOPE_SUBJECTS), "to be", 5)
        ] == [doc.chunk_id]

    def test_another_tenant_sees_nothing(self, index: KeywordIndex) -> None:
        tenant_a, tenant_b = new_tenant(), new_tenant()
        self._publish(index, [chunk(tenant_a, "quarterly revenue report")])
        assert index.search(AccessScope(tenant_b, SCOPE_SUBJECTS), "revenue", 10) == []
        assert len(index.search(AccessScope(tenant_a, SCOPE_SUBJECTS), "revenue", 10)) == 1

    def test_a_scope_reading_the_system_corpus_sees_it_and_no_other_tenant(
        self, index: KeywordIndex
    ) -> None:
        """Owner in (tenant, system), each owner under its own subjects: a system
        row the tenant's subjects would open but the system subjects do not stays
        hidden, and a third tenant's rows are never read."""
        tenant, system, other = new_tenant(), new_tenant(), new_tenant()
        own = chunk(tenant, "evacuation drill for our floor")
        shared = chunk(system, "evacuation assembly point", subjects=("tenant:system",))
        narrowed = chunk(system, "evacuation route for team a", subjects=("team:a",))
        foreign = chunk(other, "evacuation plan of another tenant")
        for docs in ([own], [shared, narrowed], [foreign]):
            self._publish(index, docs)
        reading = SystemReading(system, ("tenant:system",))

        def ids(scope: AccessScope) -> set[str]:
            return {h.chunk_id for h in index.search(scope, "evacuation", 10)}

        assert ids(AccessScope(tenant, SCOPE_SUBJECTS, reading)) == {own.chunk_id, shared.chunk_id}
        assert ids(AccessScope(tenant, SCOPE_SUBJECTS)) == {own.chunk_id}
        assert ids(AccessScope(tenant, (), reading)) == set()

    def test_subjects_filter_and_empty_subjects(self, index: KeywordIndex) -> None:
        tenant = new_tenant()
        secret = chunk(tenant, "budget for hiring", subjects=("group:finance",))
        open_doc = chunk(tenant, "budget for snacks", subjects=("team:a",))
        self._publish(index, [secret, open_doc])
        assert [
            h.chunk_id for h in index.search(AccessScope(tenant, ("team:a",)), "budget", 10)
        ] == [open_doc.chunk_id]
        assert (
            len(index.search(AccessScope(tenant, ("team:a", "group:finance")), "budget", 10)) == 2
        )
        assert index.search(AccessScope(tenant, ()), "budget", 10) == []

    def test_hidden_until_live_and_after_unpublish(self, index: KeywordIndex) -> None:
        tenant = new_tenant()
        doc = chunk(tenant, "snapshot retention policy")
        index.upsert([doc])
        scope = AccessScope(tenant, SCOPE_SUBJECTS)
        assert index.search(scope, "snapshot", 5) == []
        index.set_live(tenant, doc.source_id, doc.version_id, True)
        assert len(index.search(scope, "snapshot", 5)) == 1
        index.set_live(tenant, doc.source_id, None, False)
        assert index.search(scope, "snapshot", 5) == []

    def test_making_live_versions_live_again_rewrites_nothing(self, index: KeywordIndex) -> None:
        """A version made live twice (a run finishing a publication that crashed
        before the pointer moved; a second model publishing the same versions,
        whose keyword documents are shared) changes no document the second time.
        OpenSearch rewrites a document to change it, and every rewrite leaves a
        deleted copy that counts in the tenant's ranking statistics until a merge."""
        tenant = new_tenant()
        docs = [chunk(tenant, f"replica lag alert {n}", source_id=f"s{n}") for n in range(3)]
        index.upsert(docs)
        versions = sorted({d.version_id for d in docs})
        assert index.set_versions_live(tenant, versions, True) == 3
        assert index.set_versions_live(tenant, versions, True) == 0
        assert index.set_live(tenant, "s1", None, True) == 0
        assert len(index.search(AccessScope(tenant, SCOPE_SUBJECTS), "replica", 5)) == 3
        assert index.set_versions_live(tenant, versions, False) == 3

    def test_compacting_after_publication_keeps_every_answer(self, index: KeywordIndex) -> None:
        tenant = new_tenant()
        scope = AccessScope(tenant, SCOPE_SUBJECTS)
        for n in range(3):  # three publications: three writes and three rewrites
            self._publish(index, [chunk(tenant, f"replica lag alert {n}", source_id=f"c{n}")])
        before = index.search(scope, "replica alert", 10)
        assert isinstance(index.compact(tenant), bool)
        assert index.search(scope, "replica alert", 10) == before
        assert index.compact(new_tenant()) is False  # a tenant without an index

    def test_limit_is_respected(self, index: KeywordIndex) -> None:
        tenant = new_tenant()
        self._publish(index, [chunk(tenant, f"invoice number {i} paid") for i in range(12)])
        assert len(index.search(AccessScope(tenant, SCOPE_SUBJECTS), "invoice", 5)) == 5

    def test_each_search_sees_one_layer(self, index: KeywordIndex) -> None:
        """Summary pages share the index with the raw chunks of their version; a
        search without filters sees the raw layer only, and asking for the
        summary layer sees only summary pages, through the same scope."""
        tenant = new_tenant()
        raw = chunk(tenant, "Night trains to the coast run on Fridays.")
        page = chunk(tenant, "Rail guide: night trains and timetables.", layer="summary")
        hidden = chunk(
            tenant, "Night trains budget summary.", layer="summary", subjects=("group:finance",)
        )
        self._publish(index, [raw, page, hidden])
        scope = AccessScope(tenant, SCOPE_SUBJECTS)
        assert [h.chunk_id for h in index.search(scope, "night trains", 10)] == [raw.chunk_id]
        assert [h.chunk_id for h in index.search(scope, "night trains", 10, SearchFilters())] == [
            raw.chunk_id
        ]
        summary = SearchFilters(layer="summary")
        assert [h.chunk_id for h in index.search(scope, "night trains", 10, summary)] == [
            page.chunk_id
        ]
        assert index.search(AccessScope(new_tenant(), SCOPE_SUBJECTS), "night", 10, summary) == []

    def test_metadata_filters(self, index: KeywordIndex) -> None:
        tenant = new_tenant()
        a = chunk(tenant, "travel policy flights", source_id="src-a")
        b = chunk(tenant, "travel policy hotels", source_id="src-b", media_type="text/plain")
        self._publish(index, [a, b])
        scope = AccessScope(tenant, SCOPE_SUBJECTS)
        assert [
            h.chunk_id
            for h in index.search(scope, "travel", 5, SearchFilters(source_ids=("src-b",)))
        ] == [b.chunk_id]
        assert [
            h.chunk_id
            for h in index.search(scope, "travel", 5, SearchFilters(media_types=("text/markdown",)))
        ] == [a.chunk_id]

    def test_document_type_filter_inside_the_query(self, index: KeywordIndex) -> None:
        tenant = new_tenant()
        document = chunk(tenant, "travel policy flights", source_id="s-doc")
        artifact = chunk(
            tenant, "travel policy report", source_id="s-art", document_type="artifact"
        )
        self._publish(index, [document, artifact])
        scope = AccessScope(tenant, SCOPE_SUBJECTS)

        def found(*types: str) -> set[str]:
            kinds = SearchFilters(document_types=types)  # type: ignore[arg-type]
            return {h.chunk_id for h in index.search(scope, "travel", 5, kinds)}

        assert found("artifact") == {artifact.chunk_id}
        assert found("source") == {document.chunk_id}
        assert found("source", "artifact") == {document.chunk_id, artifact.chunk_id}
        # the kind survives a re-scope (a rewrite of the document's other fields)
        index.set_subjects(tenant, "s-art", ["team:a", "team:b"])
        assert found("artifact") == {artifact.chunk_id}

    def test_tag_and_date_filters_inside_the_query(self, index: KeywordIndex) -> None:
        tenant = new_tenant()
        old = chunk(
            tenant,
            "travel policy 2024",
            source_id="s-old",
            tags=("policy",),
            source_date=datetime(2024, 3, 1, tzinfo=UTC),
        )
        new = chunk(
            tenant,
            "travel policy 2026",
            source_id="s-new",
            tags=("policy", "travel"),
            source_date=datetime(2026, 3, 1, tzinfo=UTC),
        )
        untagged = chunk(
            tenant, "travel notes", source_id="s-none", source_date=datetime(2026, 5, 1, tzinfo=UTC)
        )
        self._publish(index, [old, new, untagged])
        scope = AccessScope(tenant, SCOPE_SUBJECTS)
        tagged = index.search(scope, "travel", 10, SearchFilters(tags=("travel",)))
        assert [h.chunk_id for h in tagged] == [new.chunk_id]
        recent = index.search(
            scope, "travel", 10, SearchFilters(date_from=datetime(2025, 1, 1, tzinfo=UTC))
        )
        assert {h.chunk_id for h in recent} == {new.chunk_id, untagged.chunk_id}
        window = index.search(
            scope,
            "travel",
            10,
            SearchFilters(
                date_from=datetime(2024, 1, 1, tzinfo=UTC), date_to=datetime(2026, 3, 1, tzinfo=UTC)
            ),
        )
        assert [h.chunk_id for h in window] == [old.chunk_id]
        index.set_tags(tenant, "s-none", ["travel"])
        assert len(index.search(scope, "travel", 10, SearchFilters(tags=("travel",)))) == 2

    def test_upsert_is_idempotent_and_new_version_starts_hidden(self, index: KeywordIndex) -> None:
        tenant = new_tenant()
        doc = chunk(tenant, "escalation after one hour")
        self._publish(index, [doc])
        self._publish(index, [doc])
        assert index.chunk_ids(tenant) == {doc.chunk_id}
        newer = chunk(
            tenant, "escalation after two hours", version_id="ver-2", chunk_id=doc.chunk_id
        )
        index.upsert([newer])
        assert index.chunk_ids(tenant, live_only=True) == set()
        assert index.chunk_ids(tenant, live_only=False) == {doc.chunk_id}

    def test_delete_source_keep_version_and_tenant(self, index: KeywordIndex) -> None:
        tenant, other = new_tenant(), new_tenant()
        old = chunk(tenant, "old text", version_id="ver-1")
        new = chunk(tenant, "new text", version_id="ver-2")
        kept = chunk(other, "other tenant text")
        index.upsert([old, new])
        index.upsert([kept])
        assert index.delete_source(tenant, "src-1", keep_version_id="ver-2") == 1
        assert index.chunk_ids(tenant, live_only=False) == {new.chunk_id}
        index.delete_tenant(tenant)
        assert index.chunk_ids(tenant, live_only=False) == set()
        assert index.chunk_ids(other, live_only=False) == {kept.chunk_id}

    def test_delete_versions_removes_only_those_versions_of_that_tenant(
        self, index: KeywordIndex
    ) -> None:
        tenant, other = new_tenant(), new_tenant()
        old = chunk(tenant, "old text", version_id="ver-1")
        new = chunk(tenant, "new text", version_id="ver-2")
        theirs = chunk(other, "same version id elsewhere", version_id="ver-1")
        index.upsert([old, new])
        index.upsert([theirs])
        assert index.delete_versions(tenant, ["ver-1"]) == 1
        assert index.chunk_ids(tenant, live_only=False) == {new.chunk_id}
        assert index.chunk_ids(other, live_only=False) == {theirs.chunk_id}
        assert index.delete_versions(tenant, []) == 0

    def test_set_subjects_changes_visibility(self, index: KeywordIndex) -> None:
        tenant = new_tenant()
        doc = chunk(tenant, "roadmap for next year")
        self._publish(index, [doc])
        index.set_subjects(tenant, doc.source_id, ["team:b"])
        assert index.search(AccessScope(tenant, ("team:a",)), "roadmap", 5) == []
        assert len(index.search(AccessScope(tenant, ("team:b",)), "roadmap", 5)) == 1

    def test_a_tenants_scores_do_not_depend_on_other_tenants(self, index: KeywordIndex) -> None:
        """Term statistics are per tenant: what another tenant stores cannot move
        this tenant's scores (nor leak, through them, what it stores)."""
        mine, theirs = new_tenant(), new_tenant()
        docs = [
            chunk(mine, "Quarterly turbine maintenance schedule for the north plant."),
            chunk(mine, "Cafeteria menu and opening hours."),
        ]
        self._publish(index, docs)
        scope = AccessScope(mine, SCOPE_SUBJECTS)
        before = [
            (h.chunk_id, round(h.score, 6)) for h in index.search(scope, "turbine maintenance", 5)
        ]
        assert before
        self._publish(
            index,
            [
                chunk(theirs, f"turbine maintenance log entry {n}", source_id=f"s{n}")
                for n in range(30)
            ],
        )
        after = [
            (h.chunk_id, round(h.score, 6)) for h in index.search(scope, "turbine maintenance", 5)
        ]
        assert after == before

    def test_an_identifier_outranks_the_words_around_it(self, index: KeywordIndex) -> None:
        """Issue 20: "which paper mentions METTL3" ranked six chunks that say
        "paper" and "mentions" above the one that names METTL3 (METTL3/14);
        "eat-2", split into common words by the text analysis, fell to rank 10.
        Every adapter finds a code as written (BM25's weight on a rare term
        alone did not lift it; the PostgreSQL adapter ranks without rarity)."""
        tenant = new_tenant()
        # "paper" and "mentions" in one chunk of ten, the code in one of sixty
        filler = [
            chunk(tenant, f"This paper mentions result number {n} of the trial.") for n in range(6)
        ] + [chunk(tenant, f"Unrelated note number {n} on the weather.") for n in range(50)]
        named = chunk(tenant, "Circular RNA translation is enhanced by METTL3/14 and FTO.")
        worm = chunk(
            tenant, "By contrast, eat-2 mutants, a model of dietary restriction, live long."
        )
        eating = [
            chunk(tenant, f"Patients reported that they eat 2 meals and {n} snacks a day.")
            for n in range(3)
        ]
        self._publish(index, [*filler, named, worm, *eating])
        scope = AccessScope(tenant, SCOPE_SUBJECTS)
        assert index.search(scope, "paper mentions METTL3", 5)[0].chunk_id == named.chunk_id
        assert index.search(scope, "reported eat-2", 5)[0].chunk_id == worm.chunk_id

    def test_a_code_finds_its_suffixed_forms(self, index: KeywordIndex) -> None:
        """Issue 20: "kir5 findings" and "pat1 findings" found nothing by keyword:
        the texts say Kir5.1 and pat1Δ (a deletion of pat1), single tokens to
        both analyses. A code followed by a separator and more is that code;
        followed by more letters, digits or a hyphen it is another one."""
        tenant = new_tenant()
        channel = chunk(tenant, "Subunits Kir4.1 and Kir5.1 in brain astrocytes.")
        yeast = chunk(tenant, "Cse4 is depleted in pat1Δ or xrn1Δ mutants.")
        other = chunk(tenant, "The pat12 mutants are reported in the paper: findings.")
        filler = [chunk(tenant, f"Findings reported in paper {n}.") for n in range(10)]
        self._publish(index, [channel, yeast, other, *filler])
        scope = AccessScope(tenant, SCOPE_SUBJECTS)
        assert index.search(scope, "Kir5 findings", 5)[0].chunk_id == channel.chunk_id
        assert index.search(scope, "pat1 findings", 5)[0].chunk_id == yeast.chunk_id
        # a code-shaped run as long as a query may be is searched as words, not refused
        assert index.search(scope, "pat1 " + "a1" * 900, 5)[0].chunk_id == yeast.chunk_id


class TestOpenSearchKeywordIndex(KeywordIndexContract):
    @pytest.fixture
    def index(self, platform: Platform) -> KeywordIndex:
        return platform.keywords

    def test_a_document_written_before_the_document_type_is_a_source(
        self, index: KeywordIndex
    ) -> None:
        """Documents indexed before the field existed carry none (migration 0033
        re-sends only artifacts through the keyword stage): they are sources."""
        from resources.opensearch.keyword_index import OpenSearchKeywordIndex

        assert isinstance(index, OpenSearchKeywordIndex)
        tenant = new_tenant()
        current = chunk(tenant, "travel policy report", source_id="s-new")
        self._publish(index, [current])
        old = chunk(tenant, "travel policy flights", source_id="s-old")
        document = {
            "tenant_id": tenant,
            "source_id": old.source_id,
            "version_id": old.version_id,
            "subjects": list(old.subjects),
            "media_type": old.media_type,
            "content_hash": old.content_hash,
            "live": True,
            "title": old.title,
            "content": old.content,
            "tags": [],
            "source_date": None,
            "layer": "raw",
        }
        index.client.index(
            index=index.index_for(tenant),
            id=old.chunk_id,
            body=document,
            routing=tenant,
            refresh=True,
        )
        scope = AccessScope(tenant, SCOPE_SUBJECTS)

        def found(*types: str) -> set[str]:
            kinds = SearchFilters(document_types=types)  # type: ignore[arg-type]
            return {h.chunk_id for h in index.search(scope, "travel", 5, kinds)}

        assert found("source") == {current.chunk_id, old.chunk_id}
        assert found("artifact") == set()

    def test_a_small_index_is_merged_into_one_segment_and_a_large_one_left(
        self, index: KeywordIndex
    ) -> None:
        from resources.opensearch.keyword_index import OpenSearchKeywordIndex

        assert isinstance(index, OpenSearchKeywordIndex)
        tenant = new_tenant()
        name = index.index_for(tenant)
        for n in range(4):
            self._publish(index, [chunk(tenant, f"turbine report {n}", source_id=f"m{n}")])

        def segments() -> int:
            index.client.indices.refresh(index=name)
            stats = index.client.indices.stats(index=name, metric="segments")
            return int(stats["indices"][name]["primaries"]["segments"]["count"])

        assert segments() > 1
        tiny = OpenSearchKeywordIndex(index.client, index.prefix, compact_below_bytes=1)
        assert tiny.compact(tenant) is False  # larger than its bound: left to the policy
        assert segments() > 1
        assert index.compact(tenant) is True
        deadline = time.monotonic() + 60
        while segments() != 1:
            assert time.monotonic() < deadline, "the merge never finished"
            time.sleep(0.2)
        assert index.compact(tenant) is False  # one segment: nothing to merge
        hits = index.search(AccessScope(tenant, SCOPE_SUBJECTS), "turbine", 10)
        assert len(hits) == 4


class TestPostgresKeywordIndex(KeywordIndexContract):
    @pytest.fixture
    def index(self, pg_keyword_platform: Platform) -> KeywordIndex:
        return pg_keyword_platform.keywords


class TestInMemoryFake(KeywordIndexContract):
    """The kernel tests' fake passes the same contract."""

    @pytest.fixture
    def index(self) -> KeywordIndex:
        from tests.fakes import InMemoryKeywordIndex

        return InMemoryKeywordIndex()
