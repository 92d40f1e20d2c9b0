"""Connector conformance: the contract in groundwork.connectors.port.Connector,
run against every connector and the fake. Each connector supplies a harness:
a connector over a source the test can change (put, remove), paging by two,
and a connector over a source that cannot be read."""

from __future__ import annotations

import io
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from groundwork.connectors.git import GitRepositoryConfig
from groundwork.connectors.port import Connector, ConnectorError, ListingPage, SourceItem
from groundwork.connectors.s3_bucket import S3BucketSettings
from groundwork.connectors.web import WebSiteConfig, canonical_url
from resources.connectors.fsspec_files import FsspecConnector
from resources.connectors.git_repository import GitRepositoryConnector
from resources.connectors.s3_bucket import S3BucketConnector
from resources.connectors.web_site import WebSiteConnector
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from testbed.git_repository import BareRepository
from testbed.web_site import Fault, LoopbackSite
from tests.conftest import TEST_S3_BUCKET
from tests.fakes_connectors import FakeConnector
from tests.loopback_http import loopback_server


class ConnectorHarness(Protocol):
    @property
    def connector(self) -> Connector: ...

    def put(self, name: str, data: bytes) -> str:
        """Create or overwrite an item at the source; returns its item id."""
        ...

    def remove(self, name: str) -> None: ...

    def broken(self) -> Connector:
        """A connector whose source cannot be listed (missing bucket, folder ...)."""
        ...


@dataclass
class Drained:
    items: dict[str, SourceItem]
    deleted: set[str]
    cursors: list[str | None]
    pages: list[ListingPage]


def drain(connector: Connector, cursor: str | None = None) -> Drained:
    pages = list(connector.list_pages(cursor))
    items = {i.item_id: i for p in pages for i in p.items}
    return Drained(items, {d for p in pages for d in p.deleted}, [p.cursor for p in pages], pages)


class ConnectorContract:
    @pytest.fixture
    def harness(self) -> ConnectorHarness:
        raise NotImplementedError

    def test_is_the_port(self, harness: ConnectorHarness) -> None:
        assert isinstance(harness.connector, Connector)
        assert isinstance(harness.connector.kind, str) and harness.connector.kind

    def test_pages_resume_from_a_cursor(self, harness: ConnectorHarness) -> None:
        ids = [harness.put(f"docs/page-{n}.txt", f"page {n}".encode()) for n in range(5)]
        whole = drain(harness.connector)
        assert set(ids) <= set(whole.items)
        assert len(whole.pages) >= 2, "the harness pages by two"
        first = whole.pages[0]
        rest = drain(harness.connector, first.cursor)
        assert set(rest.items) == set(whole.items) - {i.item_id for i in first.items}

    def test_a_changed_item_gets_a_new_version(self, harness: ConnectorHarness) -> None:
        item_id = harness.put("notes/change.txt", b"first words")
        before = drain(harness.connector)
        harness.put("notes/change.txt", b"second, longer words")
        after = drain(
            harness.connector, None if harness.connector.complete_listing else before.cursors[-1]
        )
        assert after.items[item_id].version != before.items[item_id].version
        again = drain(harness.connector)
        assert again.items[item_id].version == after.items[item_id].version

    def test_a_deletion_is_reported(self, harness: ConnectorHarness) -> None:
        kept = harness.put("keep.txt", b"kept")
        gone = harness.put("gone.txt", b"gone")
        before = drain(harness.connector)
        assert {kept, gone} <= set(before.items)
        harness.remove("gone.txt")
        after = drain(
            harness.connector, None if harness.connector.complete_listing else before.cursors[-1]
        )
        if harness.connector.complete_listing:
            assert gone not in after.items and (kept in after.items)
        else:
            assert gone in after.deleted

    def test_a_sorted_listing_names_ranges_that_cover_every_id(
        self, harness: ConnectorHarness
    ) -> None:
        """Byte order (UTF-8, which is code point order): 'B' before 'a', 'é' last."""
        ids = [harness.put(f"docs/{n}.txt", n.encode()) for n in ("é", "a", "Z", "B", "b")]
        whole = drain(harness.connector)
        spans = [p.span for p in whole.pages]
        if not harness.connector.sorted_listing:
            assert spans == [None] * len(spans), "a range only from a sorted listing"
            return
        listed = [i.item_id for p in whole.pages for i in p.items]
        assert listed == sorted(listed, key=lambda i: i.encode()) and set(ids) <= set(listed)
        assert all(span is not None for span in spans)
        ranges = [s for s in spans if s is not None]
        assert ranges[0][0] is None and ranges[-1][1] is None, "from the start to the end"
        for before, after in zip(ranges, ranges[1:], strict=False):
            assert before[1] is not None and before[1] == after[0], "successive ranges meet"
        for page, (low, high) in zip(whole.pages, ranges, strict=True):
            for item in page.items:
                key = item.item_id.encode()
                assert low is None or key > low.encode()
                assert high is None or key <= high.encode()
        rest = drain(harness.connector, whole.pages[0].cursor)
        assert rest.pages[0].span is not None
        assert rest.pages[0].span[0] == ranges[0][1], "a resumed listing starts where it stopped"

    def test_fetch_streams_the_bytes(self, harness: ConnectorHarness) -> None:
        body = b"the quarterly report, in full\n" * 100
        item_id = harness.put("reports/q3.txt", body)
        item = drain(harness.connector).items[item_id]
        result = harness.connector.fetch(item, None)
        assert result.stream is not None
        assert result.stream.read() == body
        assert result.version

    def test_fetch_with_the_known_version_may_answer_not_modified(
        self, harness: ConnectorHarness
    ) -> None:
        body = b"unchanged"
        item_id = harness.put("same.txt", body)
        item = drain(harness.connector).items[item_id]
        result = harness.connector.fetch(item, item.version)
        assert result.stream is None or result.stream.read() == body
        assert result.version == item.version

    def test_errors_are_connector_errors(self, harness: ConnectorHarness) -> None:
        with pytest.raises(ConnectorError) as listing:
            drain(harness.broken())
        assert listing.value.item_id is None
        item_id = harness.put("vanishing.txt", b"soon gone")
        item = drain(harness.connector).items[item_id]
        harness.remove("vanishing.txt")
        with pytest.raises(ConnectorError) as fetching:
            harness.connector.fetch(item, None)
        assert fetching.value.item_id == item_id


class FakeHarness:
    def __init__(self) -> None:
        self.connector = FakeConnector(page_size=2)

    def put(self, name: str, data: bytes) -> str:
        return self.connector.put(name, data)

    def remove(self, name: str) -> None:
        self.connector.remove(name)

    def broken(self) -> Connector:
        return FakeConnector(listing_faults=[ConnectorError("fake", None, "unreachable")])


class UnsortedFakeHarness(FakeHarness):
    """The fake as a complete listing that names no ranges (a crawl's kind)."""

    def __init__(self) -> None:
        self.connector = FakeConnector(page_size=2, sorted_listing=False)


class FsspecHarness:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.connector = FsspecConnector("file", str(root), page_size=2)
        self.writes = 0

    def put(self, name: str, data: bytes) -> str:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        # as written a while ago: within the racy window (3 s) a listing
        # cannot vouch for a version, and each listing names a new one
        self.writes += 1
        aged = time.time() - 60 + self.writes / 1000
        os.utime(path, (aged, aged))
        return name

    def remove(self, name: str) -> None:
        (self.root / name).unlink()

    def broken(self) -> Connector:
        return FsspecConnector("file", str(self.root / "no-such-folder"))


class S3Harness:
    def __init__(self, client: object, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self.connector = S3BucketConnector(
            client, S3BucketSettings(TEST_S3_BUCKET, prefix=prefix, page_size=2)
        )

    def put(self, name: str, data: bytes) -> str:
        key = f"{self.prefix}{name}"
        self.client.put_object(Bucket=TEST_S3_BUCKET, Key=key, Body=io.BytesIO(data))  # type: ignore[attr-defined]
        return key

    def remove(self, name: str) -> None:
        self.client.delete_object(Bucket=TEST_S3_BUCKET, Key=f"{self.prefix}{name}")  # type: ignore[attr-defined]

    def broken(self) -> Connector:
        return S3BucketConnector(self.client, S3BucketSettings(f"missing-{uuid.uuid4().hex[:8]}"))


class WebSiteHarness:
    """A loopback site, listed by its sitemap or crawled from a generated index page."""

    def __init__(self, site: LoopbackSite, root: str, crawl: bool) -> None:
        self.site = site
        self.root = root
        self.crawl = crawl
        self.connector = self._connector(root)

    def _connector(self, base: str) -> WebSiteConnector:
        if self.crawl:
            config = WebSiteConfig(start_urls=(f"{base}/",), crawl=True, delay_seconds=0.0)
        else:
            config = WebSiteConfig(sitemaps=(f"{base}/sitemap.xml",), delay_seconds=0.0)
        return WebSiteConnector(config, page_size=2)

    def put(self, name: str, data: bytes) -> str:
        self.site.put(f"/{name}", data, "text/plain")
        return canonical_url(f"{self.root}/{name}")

    def remove(self, name: str) -> None:
        self.site.remove(f"/{name}")

    def broken(self) -> Connector:
        for path in ("/gone/", "/gone/sitemap.xml"):
            self.site.faults[path] = Fault(404)
        return self._connector(f"{self.root}/gone")


class GitRepositoryHarness:
    """A bare repository made in the test; every put or remove is a pushed commit."""

    def __init__(self, root: Path) -> None:
        self.repo = BareRepository(root)
        self.repo.commit("empty start")
        self.connector = GitRepositoryConnector(
            GitRepositoryConfig(str(self.repo.bare)), page_size=2
        )

    def put(self, name: str, data: bytes) -> str:
        self.repo.put(name, data)
        return name

    def remove(self, name: str) -> None:
        self.repo.remove(name)

    def broken(self) -> Connector:
        return GitRepositoryConnector(GitRepositoryConfig(str(self.repo.bare), branch="missing"))


class TestFakeConnector(ConnectorContract):
    @pytest.fixture
    def harness(self) -> ConnectorHarness:
        return FakeHarness()


class TestUnsortedFakeConnector(ConnectorContract):
    @pytest.fixture
    def harness(self) -> ConnectorHarness:
        return UnsortedFakeHarness()


class TestFsspecConnector(ConnectorContract):
    @pytest.fixture
    def harness(self, tmp_path: Path) -> ConnectorHarness:
        return FsspecHarness(tmp_path)


class TestS3BucketConnector(ConnectorContract):
    @pytest.fixture
    def harness(self, seaweedfs: EmbeddedSeaweedFS) -> Iterator[ConnectorHarness]:
        yield S3Harness(seaweedfs.client(), f"conformance-{uuid.uuid4().hex[:8]}/")


class TestWebSiteSitemapConnector(ConnectorContract):
    @pytest.fixture
    def harness(self) -> Iterator[ConnectorHarness]:
        site = LoopbackSite()
        with loopback_server(site.handler()) as root:
            yield WebSiteHarness(site, root, crawl=False)


class TestWebSiteCrawlConnector(ConnectorContract):
    @pytest.fixture
    def harness(self) -> Iterator[ConnectorHarness]:
        site = LoopbackSite()
        site.index = True
        with loopback_server(site.handler()) as root:
            yield WebSiteHarness(site, root, crawl=True)


class TestGitRepositoryConnector(ConnectorContract):
    @pytest.fixture
    def harness(self, tmp_path: Path) -> ConnectorHarness:
        return GitRepositoryHarness(tmp_path)
