"""The web crawl keeps its link graph between passes (issue #34): each
crawled page's links are stored with its item, so the next pass revisits
every page — also those found only by crawling — with a conditional GET, and
follows the links of a page answered 304 Not Modified without reading it. A
page no longer linked from anywhere (and in no sitemap) is not reached, so
it is deleted at the source: unsearchable after that pass. The loopback site,
the sync service and the real engines."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groundwork.connectors.web import WebSiteConfig
from groundwork.lifecycle import purge_deleted
from resources.composition.platform import Platform
from resources.connectors.web_site import WebSiteConnector
from testbed.web_site import LoopbackSite, html_page
from tests.e2e.test_web_and_git_connectors import Mirror
from tests.loopback_http import loopback_server

PAGES = ("/", "/guide", "/guide/vpn", "/faq")


@pytest.fixture
def site() -> Iterator[tuple[LoopbackSite, str]]:
    state = LoopbackSite()
    with loopback_server(state.handler()) as root:
        yield state, root


@pytest.mark.parametrize("validator", ["etag", "last-modified"])
def test_a_second_crawl_revalidates_known_pages_and_drops_an_unlinked_one(
    platform: Platform, tenant_id: str, site: tuple[LoopbackSite, str], validator: str
) -> None:
    state, root = site
    state.etags = validator == "etag"
    state.put("/", html_page("Home", "Welcome to the intranet.", ("/guide", "/faq")))
    state.put("/guide", html_page("Guide", "Start here.", ("/guide/vpn",)))
    # found only by crawling: linked from /guide, in no sitemap
    state.put("/guide/vpn", html_page("VPN", "The VPN gateway is vpn.example.org."))
    state.put("/faq", html_page("FAQ", "Passwords rotate every 90 days."))
    config = WebSiteConfig(start_urls=(f"{root}/",), crawl=True, delay_seconds=0.0)
    mirror = Mirror(platform, tenant_id, "web", WebSiteConnector(config))

    first = mirror.sync()
    assert (first.seen, first.changed) == (4, 4)
    assert mirror.hits("what is the VPN gateway", "vpn.example.org")

    # unchanged: one conditional GET per page, each answered 304; nothing read
    state.log.clear()
    mirror.connector = WebSiteConnector(config)  # a new process: only the catalog remembers
    again = mirror.sync()
    assert (again.seen, again.changed, again.deleted, again.reads) == (4, 0, 0, 0)
    assert {path: state.requests_to(path) for path in PAGES} == {p: [304] for p in PAGES}

    # /guide drops its link: /guide/vpn is linked from nowhere, so it is gone
    state.put("/guide", html_page("Guide", "Start here. The VPN page moved away."))
    state.log.clear()
    mirror.connector = WebSiteConnector(config)
    dropped = mirror.sync()
    assert (dropped.seen, dropped.changed, dropped.deleted) == (3, 1, 1)
    assert state.requests_to("/guide") == [200, 304], "read by the crawl, revalidated by the fetch"
    assert state.requests_to("/guide/vpn") == [], "not linked: not asked for"
    assert state.requests_to("/faq") == [304]
    assert not mirror.hits("what is the VPN gateway", "vpn.example.org")
    assert mirror.hits("how often do passwords rotate", "90 days")

    # linked again before the deletion sweep ran: that page's registration waits
    # (failed, with its reason) and the pass goes on; after the sweep it is back
    state.put("/faq", html_page("FAQ", "Passwords rotate every 90 days.", ("/guide/vpn",)))
    mirror.connector = WebSiteConnector(config)
    early = mirror.sync()
    assert (early.seen, early.changed, early.failed) == (4, 1, 1)
    assert "being deleted" in early.errors[-1]
    purge_deleted(platform.catalog, platform.indexes(), platform.blobs, tenant_id)
    mirror.connector = WebSiteConnector(config)
    back = mirror.sync()
    assert (back.seen, back.changed, back.failed) == (4, 1, 0)
    assert mirror.hits("what is the VPN gateway", "vpn.example.org")
