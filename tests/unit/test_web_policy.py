"""The web connector's pure policy: one page one name, the scope, robots.txt,
politeness and versions (groundwork/connectors/web.py)."""

from __future__ import annotations

import threading
import time

import pytest

from groundwork.connectors.web import (
    CrawlState,
    PolitenessGate,
    RobotsRules,
    WebScope,
    WebSiteConfig,
    canonical_url,
    conditional_headers,
    listed_version,
    listing_vouches,
    page_filename,
    page_links,
    retry_after_seconds,
    served_version,
)


def test_one_page_has_one_name() -> None:
    same = {
        canonical_url("HTTP://Docs.Example.COM:80/guide/./a/../intro?b=2&a=1#install"),
        canonical_url("http://docs.example.com/guide/intro?a=1&b=2"),
        canonical_url("intro?a=1&b=2#top", base="http://docs.example.com/guide/start"),
    }
    assert same == {"http://docs.example.com/guide/intro?a=1&b=2"}
    assert canonical_url("https://example.com") == "https://example.com/"
    assert canonical_url("https://example.com:443/x") == "https://example.com/x"
    assert canonical_url("http://127.0.0.1:8123/x") == "http://127.0.0.1:8123/x"


def test_scope_is_hosts_and_path_prefixes() -> None:
    scope = WebScope(("docs.example.com",), ("/guide/", "/faq"))
    assert scope.admits("http://docs.example.com/guide/intro")
    assert scope.admits("https://docs.example.com/faq")
    assert not scope.admits("http://docs.example.com/blog/post")
    assert not scope.admits("http://www.example.com/guide/intro")
    assert not scope.admits("ftp://docs.example.com/guide/intro")
    config = WebSiteConfig(start_urls=("http://127.0.0.1:9/guide/",))
    assert config.scope().hosts == ("127.0.0.1:9",)


def test_links_and_rel_canonical_are_resolved_once_each() -> None:
    html = b"""<html><head><base href="/docs/"><link rel="Canonical" href="/docs/page?utm=1#x">
    </head><body><a href="a.html#s1">a</a><a href="a.html#s2">again</a>
    <a href="mailto:x@y">mail</a><a rel="nofollow" href="/private">p</a>
    <a href="https://other.example/">other</a></body></html>"""
    found = page_links(html, "http://site.test/docs/page")
    assert found.canonical == "http://site.test/docs/page?utm=1"
    assert found.links == ("http://site.test/docs/a.html", "https://other.example/")


def test_robots_rules_and_crawl_delay() -> None:
    rules = RobotsRules(
        "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\nSitemap: http://s.test/sm.xml\n"
    )
    assert rules.allows("http://s.test/public/a", "GroundworkBot")
    assert not rules.allows("http://s.test/private/a", "GroundworkBot")
    assert rules.crawl_delay("GroundworkBot") == 2.0
    assert rules.sitemaps() == ("http://s.test/sm.xml",)
    assert RobotsRules(None).allows("http://s.test/private/a", "GroundworkBot")


def test_politeness_waits_out_the_delay_between_requests() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    gate = PolitenessGate(1.5, clock=lambda: now[0], sleep=sleep)
    gate.wait()
    now[0] += 0.5
    gate.wait()
    now[0] += 3.0
    gate.wait()
    assert slept == [1.0]


def test_versions_are_validators_a_conditional_get_sends_back() -> None:
    etag = served_version({"etag": '"abc"', "last-modified": "Tue, 01 Dec 2026 10:00:00 GMT"}, "d")
    assert etag == 'etag:"abc"'
    assert conditional_headers(etag) == {"If-None-Match": '"abc"'}
    modified = served_version({"last-modified": "Tue, 01 Dec 2026 10:00:00 GMT"}, "d")
    assert conditional_headers(modified) == {"If-Modified-Since": "Tue, 01 Dec 2026 10:00:00 GMT"}
    assert served_version({}, "d1") == "sha256:d1"
    assert conditional_headers("sha256:d1") == {}
    config = WebSiteConfig(sitemaps=("http://s.test/sitemap.xml",), revalidate_days=1.0)
    listed = listed_version("http://s.test/a", "2026-12-01", config, now=0.0)
    assert listed.startswith("lastmod:2026-12-01@")
    assert listing_vouches(listed, listed)
    assert not listing_vouches(listed_version("http://s.test/a", "2026-12-02", config, 0.0), listed)
    assert listed_version("http://s.test/a", None, config) == "unversioned"
    assert not listing_vouches("unversioned", "unversioned")
    distrust = WebSiteConfig(sitemaps=config.sitemaps, trust_lastmod=False)
    assert listed_version("http://s.test/a", "2026-12-01", distrust) == "unversioned"


def test_a_lastmod_version_is_revalidated_once_a_round_spread_over_pages() -> None:
    config = WebSiteConfig(sitemaps=("http://s.test/sitemap.xml",), revalidate_days=1.0)
    day = 86400.0
    urls = [f"http://s.test/p{n}" for n in range(200)]
    today = [listed_version(u, "2026-12-01", config, now=10 * day) for u in urls]
    later = [listed_version(u, "2026-12-01", config, now=10 * day + day / 4) for u in urls]
    tomorrow = [listed_version(u, "2026-12-01", config, now=11 * day) for u in urls]
    rolled = sum(a != b for a, b in zip(today, later, strict=True))
    assert 20 < rolled < 90, "about a quarter of the pages are due after a quarter of a day"
    assert all(a != b for a, b in zip(today, tomorrow, strict=True))


def test_retry_after_reads_seconds_and_dates() -> None:
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds("Tue, 01 Dec 2026 10:00:30 GMT", now=1796119200.0) == 30.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None


def test_crawl_state_round_trips_as_a_cursor() -> None:
    state = CrawlState()
    scope = WebScope(("s.test",))
    state.enqueue(
        ["http://s.test/a", "http://s.test/a", "http://x.test/b", "http://s.test/c"], scope
    )
    state.listed = 1
    again = CrawlState.decode(state.encode())
    assert again.frontier == ["http://s.test/a", "http://s.test/c"]
    assert again.seen == {"http://s.test/a", "http://s.test/c"} and again.listed == 1


def test_a_page_is_named_with_the_extension_of_its_type() -> None:
    assert page_filename("http://s.test/guide/intro", None) == "intro.html"
    assert page_filename("http://s.test/guide/", None) == "index.html"
    assert page_filename("http://s.test/files/q3%20report.pdf", None) == "q3 report.pdf"
    assert page_filename("http://s.test/page.php", "text/html") == "page.php.html"
    assert page_filename("http://s.test/notes.txt", "text/plain") == "notes.txt"
    assert page_filename("http://s.test/notes.txt", "text/html") == "notes.txt.html"


def test_a_stored_configuration_needs_a_sitemap_or_a_start() -> None:
    config = WebSiteConfig.from_config({"start_urls": ["http://s.test/"], "max_pages": 5})
    assert config.crawl and config.max_pages == 5 and config.delay_seconds == 1.0
    assert not WebSiteConfig.from_config({"sitemaps": ["http://s.test/sitemap.xml"]}).crawl
    with pytest.raises(ValueError):
        WebSiteConfig.from_config({})


def test_politeness_holds_across_threads() -> None:
    """The sync service fetches from several threads: they still take turns."""
    gate = PolitenessGate(0.05)
    threads = [threading.Thread(target=gate.wait) for _ in range(6)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert time.monotonic() - started >= 5 * 0.05 and gate.sent == 6
