"""The web site connector against a real HTTP server on loopback
(testbed/web_site.py): sitemap and crawl listings, robots.txt, the page cap,
canonical names, conditional GETs and the source's failures as ConnectorError."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groundwork.connectors.port import ConnectorError, ListingPage
from groundwork.connectors.web import WebSiteConfig
from resources.connectors.web_site import WebSiteConnector
from testbed.web_site import Fault, LoopbackSite, html_page
from tests.loopback_http import loopback_server


@pytest.fixture
def site() -> Iterator[tuple[LoopbackSite, str]]:
    state = LoopbackSite()
    with loopback_server(state.handler()) as root:
        yield state, root


def connector(root: str, **config: object) -> WebSiteConnector:
    defaults: dict[str, object] = {"sitemaps": (f"{root}/sitemap.xml",), "delay_seconds": 0.0}
    defaults.update(config)
    return WebSiteConnector(WebSiteConfig(**defaults), page_size=2)  # type: ignore[arg-type]


def listed(conn: WebSiteConnector, cursor: str | None = None) -> list[ListingPage]:
    return list(conn.list_pages(cursor))


def ids(pages: list[ListingPage]) -> list[str]:
    return [item.item_id for page in pages for item in page.items]


def test_sitemap_listing_requests_no_page_and_resumes_from_a_cursor(site) -> None:
    state, root = site
    for n in range(5):
        state.put(f"/doc/{n}", html_page(f"Doc {n}", f"text {n}"))
    conn = connector(root)
    pages = listed(conn)
    assert ids(pages) == [f"{root}/doc/{n}" for n in range(5)]
    assert [p.cursor is None for p in pages] == [False, False, True]
    assert {path for path, _ in state.log} == {"/sitemap.xml", "/robots.txt"}
    resumed = listed(connector(root), pages[0].cursor)
    assert ids(resumed) == [f"{root}/doc/{n}" for n in range(2, 5)]
    assert all(item.location["url"] == item.item_id for p in pages for item in p.items)
    assert pages[0].items[0].location["filename"] == "0.html"


def test_conditional_get_answers_not_modified_and_a_change_is_served(site) -> None:
    state, root = site
    state.sitemap_lastmod = False  # nothing vouches for the page: it is revalidated
    state.put("/a", html_page("A", "first"))
    conn = connector(root)
    (item,) = ids_items(conn)
    first = conn.fetch(item, None)
    assert first.stream is not None and b"first" in first.stream.read()
    assert first.version.startswith("etag:") and first.media_type == "text/html"
    again = conn.fetch(item, first.version)
    assert again.stream is None and again.version == first.version
    assert state.requests_to("/a") == [200, 304]
    state.put("/a", html_page("A", "second"))
    changed = conn.fetch(item, first.version)
    assert changed.stream is not None and b"second" in changed.stream.read()
    assert changed.version != first.version


def test_every_request_names_the_crawler_conditional_ones_too(site) -> None:
    """robots.txt rules and a site's logs go by the User-Agent: a conditional
    GET (its own headers) still sends it."""
    state, root = site
    state.sitemap_lastmod = False
    state.put("/a", html_page("A", "first"))
    conn = connector(root, user_agent="groundwork-test/1")
    (item,) = ids_items(conn)
    first = conn.fetch(item, None)
    assert conn.fetch(item, first.version).stream is None
    assert state.requests_to("/a") == [200, 304]
    assert set(state.agents) == {"groundwork-test/1"}, state.agents


def test_a_redirect_is_followed_to_the_page_it_names(site) -> None:
    state, root = site
    state.put("/b", html_page("B", "moved here"))
    state.redirects["/a"] = "/b"  # relative, as sites send it
    conn = connector(root, sitemaps=(), start_urls=(f"{root}/a",), crawl=True)
    assert ids(listed(conn)) == [f"{root}/b"]


def test_a_redirect_loop_and_an_unreachable_site_are_errors(site) -> None:
    state, root = site
    state.put("/a", "x")
    conn = connector(root)
    (item,) = ids_items(conn)
    state.redirects["/a"] = "/a"
    with pytest.raises(ConnectorError) as looped:
        conn.fetch(item, None)
    assert "too many redirects" in looped.value.reason and not looped.value.retryable
    with loopback_server(state.handler()) as gone:
        pass  # its port is closed now
    unreachable = connector(gone)
    with pytest.raises(ConnectorError) as refused:
        listed(unreachable)
    assert refused.value.retryable and "cannot connect" in refused.value.reason


def test_last_modified_alone_is_a_validator_too(site) -> None:
    state, root = site
    state.sitemap_lastmod = False
    state.etags = False
    state.put("/a", html_page("A", "first"))
    conn = connector(root)
    (item,) = ids_items(conn)
    first = conn.fetch(item, None)
    assert first.version.startswith("modified:")
    assert conn.fetch(item, first.version).stream is None
    assert state.requests_to("/a") == [200, 304]


def test_a_trusted_lastmod_is_the_version_listed_and_served(site) -> None:
    state, root = site
    state.put("/a", html_page("A", "first"))
    conn = connector(root)
    (item,) = ids_items(conn)
    fetched = conn.fetch(item, None)
    assert fetched.stream is not None and fetched.version == item.version
    (again,) = ids_items(conn)
    assert again.version == fetched.version, "the next listing compares equal: no request"
    before = len(state.log)
    assert conn.fetch(again, fetched.version).stream is None and len(state.log) == before
    distrusting = connector(root, trust_lastmod=False)
    (unversioned,) = ids_items(distrusting)
    assert distrusting.fetch(unversioned, None).version.startswith("etag:")


def test_a_sitemap_lastmod_is_the_listed_version(site) -> None:
    state, root = site
    state.put("/a", "one")
    (before,) = ids_items(connector(root))
    state.put("/a", "two")
    (after,) = ids_items(connector(root))
    (unchanged,) = ids_items(connector(root))
    assert before.version.startswith("lastmod:") and before.version != after.version
    assert unchanged.version == after.version


def test_robots_txt_and_path_prefixes_bound_the_listing(site) -> None:
    state, root = site
    state.robots = "User-agent: *\nDisallow: /docs/private/\n"
    for path in ("/docs/a", "/docs/private/b", "/blog/c"):
        state.put(path, "x")
    assert ids(listed(connector(root, path_prefixes=("/docs/",)))) == [f"{root}/docs/a"]


def test_a_crawl_follows_links_once_per_canonical_page_up_to_the_cap(site) -> None:
    state, root = site
    state.put(
        "/", html_page("Home", "h", ("/a", "/b?x=1#frag", "/b?x=1", "http://elsewhere.test/"))
    )
    state.put("/a", html_page("A", "a", ("/c", "/a-print")))
    state.put("/a-print", html_page("A print", "a", canonical="/a"))
    state.put("/b?x=1", html_page("B", "b", ("/missing",)))
    state.put("/c", html_page("C", "c"))
    crawl = connector(root, sitemaps=(), start_urls=(f"{root}/",), crawl=True)
    found = ids(listed(crawl))
    assert found == [f"{root}/", f"{root}/a", f"{root}/b?x=1", f"{root}/c"]
    assert state.requests_to("/missing") == [404]
    (home,) = [
        i
        for p in listed(
            connector(root, sitemaps=(), start_urls=(f"{root}/",), crawl=True, max_pages=1)
        )
        for i in p.items
    ]
    assert home.item_id == f"{root}/"
    # a crawl reads each page once: the fetch of a listed page revalidates the bytes
    # the listing read (304) instead of downloading them again ...
    pages = crawl.list_pages(None)
    first = next(pages)
    fetched = crawl.fetch(first.items[0], None)
    assert fetched.stream is not None and b"<h1>Home</h1>" in fetched.stream.read()
    assert state.requests_to("/")[-2:] == [200, 304]
    # ... and a page the catalog holds in the version just read needs no request at all
    list(pages)
    before = len(state.log)
    assert crawl.fetch(first.items[1], first.items[1].version).stream is None
    assert len(state.log) == before


def test_throttling_and_failures_are_connector_errors_with_retry_hints(site) -> None:
    state, root = site
    state.put("/a", "x")
    conn = connector(root)
    (item,) = ids_items(conn)
    state.faults["/a"] = Fault(429, {"Retry-After": "12"})
    with pytest.raises(ConnectorError) as throttled:
        conn.fetch(item, None)
    assert throttled.value.retryable and throttled.value.retry_after == 12.0
    assert throttled.value.item_id == item.item_id
    state.faults["/a"] = Fault(403)
    with pytest.raises(ConnectorError) as forbidden:
        conn.fetch(item, None)
    assert "forbidden" in forbidden.value.reason and not forbidden.value.retryable
    state.faults.pop("/a")
    state.redirects["/a"] = f"{root}/outside/a"
    state.put("/outside/a", "elsewhere")
    with pytest.raises(ConnectorError, match="out of the scope"):
        connector(root, path_prefixes=("/a",)).fetch(item, None)
    state.redirects.clear()
    state.remove("/a")
    with pytest.raises(ConnectorError) as gone:
        conn.fetch(item, None)
    assert not gone.value.retryable and "not found" in gone.value.reason


def test_a_timeout_is_retryable(site) -> None:
    state, root = site
    state.put("/a", "x")
    conn = connector(root, timeout_seconds=0.3)
    (item,) = ids_items(conn)
    state.faults["/a"] = Fault(200, stall_seconds=1.0)
    with pytest.raises(ConnectorError) as timed_out:
        conn.fetch(item, None)
    assert timed_out.value.retryable and "timed out" in timed_out.value.reason


def test_a_broken_sitemap_is_an_error_never_an_empty_site(site) -> None:
    state, root = site
    state.faults["/sitemap.xml"] = Fault(503, {"Retry-After": "5"})
    with pytest.raises(ConnectorError) as unavailable:
        listed(connector(root))
    assert unavailable.value.item_id is None and unavailable.value.retry_after == 5.0
    state.faults["/sitemap.xml"] = Fault(200)  # a body that is no sitemap
    with pytest.raises(ConnectorError, match="lists no page"):
        listed(connector(root))
    del state.faults["/sitemap.xml"]
    state.faults["/robots.txt"] = Fault(500)
    with pytest.raises(ConnectorError):
        listed(connector(root))


def test_requests_keep_the_politeness_delay(site) -> None:
    state, root = site
    for n in range(3):
        state.put(f"/p{n}", html_page("P", "p"))
    waits: list[float] = []
    clock = [0.0]

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        clock[0] += seconds

    conn = WebSiteConnector(
        WebSiteConfig(start_urls=(f"{root}/p0",), crawl=True, delay_seconds=2.0),
        clock=lambda: clock[0],
        sleep=sleep,
    )
    state.put("/p0", html_page("P", "p", ("/p1", "/p2")))
    assert len(ids(listed(conn))) == 3
    # robots.txt, then three pages: every request after the first waited 2 s
    assert waits == [2.0, 2.0, 2.0]


def ids_items(conn: WebSiteConnector):
    return [item for page in conn.list_pages(None) for item in page.items]


def test_a_crawled_page_keeps_its_links_in_scope_and_none_past_the_bound(site) -> None:
    """The links a page keeps for the next crawl; past the bound none at all,
    so the page is read in full next time rather than followed in part (a
    truncated list would leave the pages only it links unreached: deleted)."""
    from groundwork.connectors.web import MAX_KEPT_LINKS, WebScope, kept_links

    scope = WebScope(("127.0.0.1:8000",))
    inside = [f"http://127.0.0.1:8000/p{n}" for n in range(3)]
    assert kept_links([*inside, "http://elsewhere.test/"], scope) == tuple(inside)
    many = [f"http://127.0.0.1:8000/p{n}" for n in range(MAX_KEPT_LINKS + 1)]
    assert kept_links(many, scope) is None
    state, root = site
    state.put("/", html_page("Home", "h", ("/a",)))
    state.put("/a", html_page("A", "a"))
    crawl = connector(root, sitemaps=(), start_urls=(f"{root}/",), crawl=True)
    items = {i.item_id: i for p in listed(crawl) for i in p.items}
    assert items[f"{root}/"].links == (f"{root}/a",) and items[f"{root}/a"].links == ()
