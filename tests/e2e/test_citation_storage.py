"""A citation is a snapshot that survives its source, and popular chunks are
cited over and over: measured in the bench database, 1,427,010 citations held
only 10,016 distinct (chunk, text) snapshots, 2.0 KB each, 2.9 GB in all. The
text of a snapshot is stored once per tenant; each citation keeps its own id,
key, source scope and time."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from groundwork.citations import Citation
from groundwork.documents import Location
from groundwork.ports import Principal
from groundwork.stages.registration import Registration, register_file
from resources.composition.platform import Platform


def _citation(source_id: str, version_id: str, chunk_id: str, at: datetime) -> Citation:
    return Citation(
        source_id,
        version_id,
        chunk_id,
        "1" * 64,
        "Handbook",
        Location(line_start=3),
        ("Guide", "Vacation"),
        "Employees receive 25 vacation days per year.",
        at,
    )


def _handbook_and_key(platform: Platform, tenant_id: str) -> tuple[Registration, str, Principal]:
    """The handbook registered for `tenant_id`, and a key of that tenant's staff."""
    registered = register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant_id,
        origin="api:handbook.md",
        filename="handbook.md",
        data=b"# Guide\n\n## Vacation\n\nEmployees receive 25 vacation days per year.\n",
        subjects=[f"tenant:{tenant_id}"],
        media_type="text/markdown",
    )
    assert isinstance(registered, Registration)
    key_id, secret = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "cite")
    principal = platform.catalog.principal_for_key(secret)
    assert principal is not None
    return registered, key_id, principal


def test_a_chunk_cited_again_and_again_stores_its_text_once(
    platform: Platform, tenant_id: str
) -> None:
    registered, key_id, principal = _handbook_and_key(platform, tenant_id)
    walled = platform.for_tenant(tenant_id)
    chunk_id = f"ch_{uuid.uuid4().hex}"
    first = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    ids = [
        walled.catalog.record_citations(
            principal.scope,
            key_id,
            [
                _citation(
                    registered.source_id,
                    registered.version_id,
                    chunk_id,
                    first + timedelta(minutes=n),
                )
            ],
        )[0]
        for n in range(5)
    ]
    assert len(set(ids)) == 5

    with platform.pool.connection() as conn:
        stored = conn.execute(
            "SELECT count(*) FROM citation_snapshots WHERE tenant_id = %s", (tenant_id,)
        ).fetchone()
    assert stored == (1,)
    for n, citation_id in enumerate(ids):  # each keeps its own time
        row = platform.catalog.citation(tenant_id, citation_id)
        assert row is not None
        snapshot = row["snapshot"]
        assert datetime.fromisoformat(snapshot["retrieved_at"]) == first + timedelta(minutes=n)
        assert snapshot["excerpt"] == "Employees receive 25 vacation days per year."
        assert snapshot["heading_path"] == ["Guide", "Vacation"]
        assert row["chunk_id"] == chunk_id and row["version_id"] == registered.version_id

    other = f"t-{uuid.uuid4().hex[:10]}"  # another tenant's identical text is its own row
    platform.catalog.ensure_tenant(other, other, platform.settings.default_model_key)
    theirs, other_key, other_principal = _handbook_and_key(platform, other)
    platform.for_tenant(other).catalog.record_citations(
        other_principal.scope,
        other_key,
        [_citation(theirs.source_id, theirs.version_id, chunk_id, first)],
    )
    with platform.pool.connection() as conn:
        counts = conn.execute(
            "SELECT tenant_id, count(*) FROM citation_snapshots WHERE tenant_id = ANY(%s) "
            "GROUP BY 1 ORDER BY 1",
            ([tenant_id, other],),
        ).fetchall()
    assert sorted(counts) == sorted([(tenant_id, 1), (other, 1)])


def test_a_citation_is_checked_in_the_application_layer(platform: Platform, tenant_id: str) -> None:
    """Every transport resolves citations through one service call: the issuing
    scope sees the snapshot, a key without the source's subjects gets `withheld`
    and no text, an id this tenant never issued is unknown (None)."""
    from groundwork.services.citation_checks import check_citation

    registered = register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant_id,
        origin="api:plan.md",
        filename="plan.md",
        data=b"# Plan\n\nThe hiring budget for 2027 is 3.4M.\n",
        subjects=["group:finance"],
        media_type="text/markdown",
    )
    assert isinstance(registered, Registration)
    _, finance = platform.catalog.create_api_key(tenant_id, ["group:finance"], "finance")
    _, staff = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "staff")
    reader, outsider = (platform.catalog.principal_for_key(k) for k in (finance, staff))
    assert reader is not None and outsider is not None
    walled = platform.for_tenant(tenant_id)
    [citation_id] = walled.catalog.record_citations(
        reader.scope,
        reader.key_id,
        [
            _citation(
                registered.source_id,
                registered.version_id,
                f"ch_{uuid.uuid4().hex}",
                datetime(2026, 12, 1, tzinfo=UTC),
            )
        ],
    )
    seen = check_citation(walled, reader, citation_id)
    assert seen is not None and seen.citation is not None
    assert seen.citation.excerpt == "Employees receive 25 vacation days per year."
    withheld = check_citation(walled, outsider, citation_id)
    assert withheld is not None and withheld.status == "withheld" and withheld.citation is None
    assert check_citation(walled, reader, "cit_" + "0" * 32) is None
    assert check_citation(walled, reader, "not-an-id") is None


def test_citation_ids_grow_with_time(platform: Platform, tenant_id: str) -> None:
    """Every search adds its citations to one ever-growing primary key. Random
    ids (uuid4) landed each insert on a random leaf of it, and the first change
    of a page after a checkpoint writes the whole page to the WAL: measured
    through `groundwork up` (SciFact tenant, 1.2M citations, 8 clients),
    citations_pkey wrote 5.8 KB of full-page images per search, 40% of all the
    WAL a search wrote. Ids that begin with their time append at the index's
    right edge instead. The format stays `cit_` and 32 hex digits."""
    import re
    import time

    registered, key_id, principal = _handbook_and_key(platform, tenant_id)
    walled = platform.for_tenant(tenant_id)
    at = datetime(2026, 12, 7, tzinfo=UTC)
    batches = []
    for _ in range(3):
        batches.append(
            walled.catalog.record_citations(
                principal.scope,
                key_id,
                [
                    _citation(registered.source_id, registered.version_id, f"ch_{n}", at)
                    for n in range(4)
                ],
            )
        )
        time.sleep(0.003)  # ids of one millisecond may come in any order
    ids = [citation_id for batch in batches for citation_id in batch]
    assert all(re.fullmatch(r"cit_[0-9a-f]{32}", citation_id) for citation_id in ids)
    assert len(set(ids)) == len(ids)
    for earlier, later in zip(batches, batches[1:], strict=False):
        assert max(earlier) < min(later)


def test_a_chunk_issued_again_soon_is_not_rewritten(platform: Platform, tenant_id: str) -> None:
    """The ids a key was handed are a 24-hour window (`was_issued`). Rewriting
    the row each time a popular chunk is handed out again made a new row
    version and two index entries per hit and per search; a row issued in the
    last ten minutes is left as it is, an older one is refreshed."""
    key_id, _ = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "again")
    chunk_ids = [f"ch_{uuid.uuid4().hex}" for _ in range(3)]
    platform.catalog.record_issued(key_id, chunk_ids)

    def versions() -> dict[str, tuple[str, datetime]]:
        with platform.pool.connection() as conn:
            rows = conn.execute(
                "SELECT chunk_id, xmin::text, issued_at FROM issued_chunks WHERE key_id = %s",
                (key_id,),
            ).fetchall()
        return {r[0]: (r[1], r[2]) for r in rows}

    before = versions()
    platform.catalog.record_issued(key_id, chunk_ids)
    assert versions() == before
    assert all(platform.catalog.was_issued(key_id, c) for c in chunk_ids)

    with platform.pool.connection() as conn:
        conn.execute(
            "UPDATE issued_chunks SET issued_at = now() - interval '11 minutes' "
            "WHERE key_id = %s AND chunk_id = %s",
            (key_id, chunk_ids[0]),
        )
    stale = versions()
    platform.catalog.record_issued(key_id, chunk_ids)
    after = versions()
    assert after[chunk_ids[0]][1] > stale[chunk_ids[0]][1]
    assert {c: after[c] for c in chunk_ids[1:]} == {c: stale[c] for c in chunk_ids[1:]}


def _issued_count(platform: Platform, key_id: str) -> int:
    with platform.pool.connection() as conn:
        row = conn.execute("SELECT count(*) FROM issued_chunks WHERE key_id = %s", (key_id,))
        return int(row.fetchone()[0])  # type: ignore[index]


def test_a_revoked_or_rotated_keys_issued_ids_go_with_it(
    platform: Platform, tenant_id: str
) -> None:
    """A revoked key never authenticates again, so the ids it was handed can
    never be drilled into: they go in the revocation's own statement (before,
    nothing but the tenant's erasure deleted from issued_chunks). Another key's
    ids stay."""
    revoked, _ = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "revoked")
    rotated, _ = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "rotated")
    kept, _ = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "kept")
    for key_id in (revoked, rotated, kept):
        platform.catalog.record_issued(key_id, [f"ch_{uuid.uuid4().hex}" for _ in range(3)])
    assert platform.catalog.revoke_api_key(tenant_id, revoked)
    assert platform.catalog.rotate_api_key(tenant_id, rotated) is not None
    assert _issued_count(platform, revoked) == 0
    assert _issued_count(platform, rotated) == 0
    assert _issued_count(platform, kept) == 3


def test_ids_past_the_window_are_swept_when_their_key_is_next_issued_ids(
    platform: Platform, tenant_id: str
) -> None:
    """`was_issued` reads 24 hours back; an older row was kept for ever. A key's
    rows past the window go when the key is next handed ids (once per sweep
    interval per serving process, so a search pays for it rarely and an idle key
    costs nothing); the rows inside the window stay, and another key's old rows
    wait for that key's own next issue."""
    from resources.postgres.catalog_parts import reading

    key_id, _ = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "old")
    other, _ = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "other")
    old_ids = [f"ch_{uuid.uuid4().hex}" for _ in range(2)]
    recent = f"ch_{uuid.uuid4().hex}"
    for key in (key_id, other):
        platform.catalog.record_issued(key, old_ids)
    platform.catalog.record_issued(key_id, [recent])
    with platform.pool.connection() as conn:
        conn.execute(
            "UPDATE issued_chunks SET issued_at = now() - interval '25 hours' "
            "WHERE key_id = ANY(%s) AND chunk_id = ANY(%s)",
            ([key_id, other], old_ids),
        )
    reading.ISSUED_SWEEPS.forget()  # a process that has not swept this key yet
    platform.catalog.record_issued(key_id, [f"ch_{uuid.uuid4().hex}"])
    assert _issued_count(platform, key_id) == 2  # the recent one and the new one
    assert platform.catalog.was_issued(key_id, recent)
    assert _issued_count(platform, other) == 2

    # swept once per interval: rows that age past the window meanwhile wait
    with platform.pool.connection() as conn:
        conn.execute(
            "UPDATE issued_chunks SET issued_at = now() - interval '25 hours' WHERE key_id = %s",
            (key_id,),
        )
    platform.catalog.record_issued(key_id, [f"ch_{uuid.uuid4().hex}"])
    assert _issued_count(platform, key_id) == 3
