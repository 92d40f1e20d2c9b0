"""The web site connector's policy: which URLs are one page, which pages are
in scope, what robots.txt allows, how often to knock, and what a page's
version is. The HTTP client that applies it is resources/connectors/web_site.py.

One page is one source: a URL is canonicalised (w3lib's canonical form —
query arguments sorted, percent-encoding normalised, fragment dropped — plus
the scheme's default port removed) and a page's `rel=canonical`, when it
points inside the scope, names the page instead of the URL it was reached by.

A crawl keeps its link graph between passes: each crawled page is listed
with its in-scope links, which the catalog keeps with the item. The next
crawl revalidates a known page with a conditional GET and, answered 304,
follows the links it had without reading it, so pages found only by
crawling are revisited at the cost of a 304 each; a page no longer linked
from anywhere reached (and in no sitemap) is not listed, and a complete
listing's absentee is deleted at the source.

A page's version is the validator the server gave for the bytes it served
(`etag:`, else `modified:` for Last-Modified, else `sha256:` of the body), so
the next fetch is a conditional GET that answers 304 with no body. A sitemap
listing sends no request for a page; when the sitemap gives a page's
`lastmod` (and `trust_lastmod` is on) that is the page's version, listed and
served alike, so an unchanged lastmod costs no request at all. Because a
site's lastmod can go stale, the version also carries the page's
revalidation round (`revalidate_days`, spread over the pages by their URL):
once a round each page is read again, and bytes found unchanged make no new
version. Without a lastmod a page is listed `unversioned` and revalidated by
a conditional GET on every pass.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser

from selectolax.lexbor import LexborHTMLParser
from w3lib.url import canonicalize_url

from groundwork.upload_policy import ALLOWED

KIND = "web"
DEFAULT_PORTS = {"http": 80, "https": 443}
#: a page listing stays small enough to register and store its cursor often
PAGE_SIZE = 100
#: the frontier kept in a crawl's cursor; links beyond it are dropped, not queued
MAX_FRONTIER = 20_000
#: the in-scope links kept with a crawled page for the next pass; a page with
#: more keeps none and is read in full every pass (a truncated list would
#: leave the pages only it links unreached, and so deleted)
MAX_KEPT_LINKS = 2_000


@dataclass(frozen=True)
class WebSiteConfig:
    """One site as a tenant connects it.

    `sitemaps` list their pages (sitemap indexes are followed); `start_urls`
    seed a crawl; `crawl` follows the links of every page listed. A sitemap
    alone never reads a page at listing time; a crawl must read each page to
    find its links. `hosts` defaults to the hosts of the sitemaps and start
    URLs; `path_prefixes` bound the site further. `delay_seconds` is the least
    time between two requests to the site (robots.txt's Crawl-delay wins when
    longer); `max_pages` caps one pass, in listing order, so the same first
    pages are kept on every pass."""

    sitemaps: tuple[str, ...] = ()
    start_urls: tuple[str, ...] = ()
    crawl: bool = False
    hosts: tuple[str, ...] = ()
    path_prefixes: tuple[str, ...] = ("/",)
    max_pages: int = 1000
    delay_seconds: float = 1.0
    user_agent: str = "GroundworkBot/0.1 (+https://groundwork.invalid/bot)"
    timeout_seconds: float = 20.0
    max_page_bytes: int = 64 * 1024 * 1024
    trust_lastmod: bool = True
    revalidate_days: float = 7.0
    subjects: tuple[str, ...] | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> WebSiteConfig:
        """From an instance's stored configuration; a site needs a sitemap or a start URL."""
        sitemaps = tuple(str(u) for u in config.get("sitemaps") or ())
        start_urls = tuple(str(u) for u in config.get("start_urls") or ())
        if not sitemaps and not start_urls:
            raise ValueError("a web connector needs sitemaps or start_urls")
        defaults = cls()
        return cls(
            sitemaps=sitemaps,
            start_urls=start_urls,
            crawl=bool(config.get("crawl", not sitemaps)),
            hosts=tuple(str(h).lower() for h in config.get("hosts") or ()),
            path_prefixes=tuple(str(p) for p in config.get("path_prefixes") or ("/",)),
            max_pages=int(config.get("max_pages") or defaults.max_pages),
            delay_seconds=float(config.get("delay_seconds", defaults.delay_seconds)),
            user_agent=str(config.get("user_agent") or defaults.user_agent),
            timeout_seconds=float(config.get("timeout_seconds") or defaults.timeout_seconds),
            max_page_bytes=int(config.get("max_page_bytes") or defaults.max_page_bytes),
            trust_lastmod=bool(config.get("trust_lastmod", True)),
            revalidate_days=float(config.get("revalidate_days") or defaults.revalidate_days),
        )

    def scope(self) -> WebScope:
        hosts = self.hosts or tuple(
            urlsplit(canonical_url(u)).netloc for u in (*self.sitemaps, *self.start_urls)
        )
        return WebScope(tuple(h.lower() for h in hosts), self.path_prefixes)


def canonical_url(url: str, base: str | None = None) -> str:
    """The one name of a page: resolved against `base`, w3lib's canonical
    form, no fragment, no default port, "/" for an empty path."""
    absolute = urljoin(base, url.strip()) if base else url.strip()
    parts = urlsplit(canonicalize_url(absolute, keep_fragments=False))
    netloc = parts.hostname or ""
    if parts.port is not None and parts.port != DEFAULT_PORTS.get(parts.scheme):
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))


@dataclass(frozen=True)
class WebScope:
    """Hosts (host[:port], as canonical URLs spell them) and path prefixes."""

    hosts: tuple[str, ...]
    path_prefixes: tuple[str, ...] = ("/",)

    def admits(self, url: str) -> bool:
        parts = urlsplit(url)
        return (
            parts.scheme in DEFAULT_PORTS
            and parts.netloc in self.hosts
            and any(parts.path.startswith(prefix) for prefix in self.path_prefixes)
        )


@dataclass(frozen=True)
class PageLinks:
    canonical: str | None  # the page's rel=canonical, resolved and canonicalised
    links: tuple[str, ...]  # canonical URLs of its <a href>, in document order, once each


def page_links(html: bytes, url: str) -> PageLinks:
    """What a crawl takes from a page: where it says it lives and where it
    links. `<base href>` moves the base; `rel=nofollow` links are not followed
    (the site asks crawlers not to)."""
    tree = LexborHTMLParser(html)
    base = url
    base_node = tree.css_first("base[href]")
    if base_node is not None and base_node.attributes.get("href"):
        base = urljoin(url, base_node.attributes["href"] or "")
    canonical = None
    for node in tree.css("link[rel][href]"):
        rels = (node.attributes.get("rel") or "").lower().split()
        if "canonical" in rels:
            canonical = canonical_url(node.attributes.get("href") or "", base)
            break
    links: dict[str, None] = {}
    for node in tree.css("a[href]"):
        href = node.attributes.get("href") or ""
        if "nofollow" in (node.attributes.get("rel") or "").lower().split():
            continue
        if href.startswith(("mailto:", "javascript:", "tel:", "#")):
            continue
        links.setdefault(canonical_url(href, base), None)
    return PageLinks(canonical, tuple(links))


class RobotsRules:
    """robots.txt through urllib.robotparser. RFC 9309: a missing robots.txt
    (any 4xx) allows everything; an unreachable one (5xx) is the adapter's
    ConnectorError, never read as "allowed"."""

    def __init__(self, text: str | None) -> None:
        self._parser = RobotFileParser()
        self._parser.parse((text or "").splitlines())  # no rules: everything allowed

    def allows(self, url: str, user_agent: str) -> bool:
        return self._parser.can_fetch(user_agent, url)

    def crawl_delay(self, user_agent: str) -> float | None:
        delay = self._parser.crawl_delay(user_agent)
        return None if delay is None else float(delay)

    def sitemaps(self) -> tuple[str, ...]:
        return tuple(self._parser.site_maps() or ())


class PolitenessGate:
    """The least time between two requests to one site, kept across threads
    (the sync service fetches a page's items from several): a request waits
    its turn under the lock. The clock and the sleep are injected so a test
    can see the waits without taking them. `sent` counts the requests."""

    def __init__(
        self,
        delay_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.delay_seconds = delay_seconds
        self._clock = clock
        self._sleep = sleep
        self._last: float | None = None
        self._lock = threading.Lock()
        self.sent = 0

    def wait(self) -> None:
        with self._lock:
            now = self._clock()
            if self._last is not None and now - self._last < self.delay_seconds:
                self._sleep(self.delay_seconds - (now - self._last))
                now = self._clock()
            self._last = now
            self.sent += 1


def served_version(headers: Mapping[str, str], body_digest: str) -> str:
    """The validator a later conditional GET can send back: the ETag, else
    Last-Modified, else the body's digest (then the page is read again but
    found unchanged by its bytes)."""
    etag = headers.get("etag")
    if etag:
        return f"etag:{etag}"
    modified = headers.get("last-modified")
    if modified:
        return f"modified:{modified}"
    return f"sha256:{body_digest}"


def kept_links(links: Sequence[str], scope: WebScope) -> tuple[str, ...] | None:
    """What a crawled page keeps of its links for the next pass: those in
    the scope, in document order; None (keep nothing) past MAX_KEPT_LINKS."""
    inside = tuple(url for url in links if scope.admits(url))
    return inside if len(inside) <= MAX_KEPT_LINKS else None


def revalidates(version: str) -> bool:
    """A version a conditional GET can send back (an ETag or Last-Modified)."""
    return version.startswith(("etag:", "modified:"))


def conditional_headers(known_version: str | None) -> dict[str, str]:
    if known_version is None:
        return {}
    if known_version.startswith("etag:"):
        return {"If-None-Match": known_version.removeprefix("etag:")}
    if known_version.startswith("modified:"):
        return {"If-Modified-Since": known_version.removeprefix("modified:")}
    return {}


def body_digest(chunks: Iterable[bytes]) -> str:
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Retry-After is either seconds or an HTTP date (RFC 9110 10.2.3)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass
class CrawlState:
    """Where a pass is: the pages listed so far (`listed`, in order, which the
    cap counts) and what is still to visit. It is the cursor, so a crashed
    pass resumes at the page after the last one registered."""

    listed: int = 0
    frontier: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def encode(self) -> str:
        return json.dumps(
            {
                "listed": self.listed,
                "frontier": self.frontier,
                "seen": sorted(self.seen),
            },
            separators=(",", ":"),
        )

    @classmethod
    def decode(cls, cursor: str) -> CrawlState:
        raw = json.loads(cursor)
        return cls(int(raw["listed"]), list(raw["frontier"]), set(raw["seen"]))

    def enqueue(self, urls: Sequence[str], scope: WebScope) -> None:
        for url in urls:
            if url in self.seen or not scope.admits(url) or len(self.frontier) >= MAX_FRONTIER:
                continue
            self.seen.add(url)
            self.frontier.append(url)


#: a served type's extension, for a page whose URL has none registration accepts
MEDIA_EXTENSIONS = {
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/csv": ".csv",
    "application/pdf": ".pdf",
}


def page_filename(url: str, media_type: str | None) -> str:
    """The name registration checks and citations show: the URL's last
    segment, given the extension of the type served (or, before any request,
    ".html" unless the URL names a document type): a page at /guide/intro is
    intro.html, not a file without a type."""
    segment = unquote(urlsplit(url).path.rsplit("/", 1)[-1]) or "index"
    current = "." + segment.rsplit(".", 1)[-1].lower() if "." in segment else ""
    wanted = MEDIA_EXTENSIONS.get(media_type or "")
    if wanted is None:
        return segment if current in ALLOWED else segment + ".html"
    if current in ALLOWED and media_type in ALLOWED[current]:
        return segment
    return segment + wanted


UNVERSIONED = "unversioned"


def listed_version(
    url: str, lastmod: str | None, config: WebSiteConfig, now: float | None = None
) -> str:
    """A sitemap page's version before any request: its lastmod and its
    revalidation round, or `unversioned` (revalidated every pass)."""
    if not lastmod or not config.trust_lastmod:
        return UNVERSIONED
    period = max(config.revalidate_days, 1e-6) * 86400.0
    offset = int(hashlib.sha256(url.encode()).hexdigest()[:8], 16) % int(max(period, 1.0))
    round_ = int(((time.time() if now is None else now) + offset) // period)
    return f"lastmod:{lastmod}@{round_}"


def trusted(listed: str) -> bool:
    """A listed version a fetch serves as it is (the lastmod the sitemap vouches for)."""
    return listed.startswith("lastmod:")


def listing_vouches(listed: str, known_version: str | None) -> bool:
    """A caller holding the very lastmod version the sitemap still lists
    needs no request to learn the page is unchanged."""
    return known_version == listed and trusted(listed)
