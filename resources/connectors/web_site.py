"""The web site connector: the policy of groundwork/connectors/web.py spoken
over HTTP with urllib3 (a pooled, keep-alive client; httpx cost twice its CPU
per request, which an unchanged site's pass is made of: bench/README.md).

Listing: the sitemaps' pages (ultimate-sitemap-parser reads the XML, text,
RSS and Atom forms; indexes are followed here, through the same polite
client), then — when the site is crawled — the links of every page listed,
breadth first, within the scope, robots.txt's rules and the page cap. A
sitemap-only listing sends no request for a page; a crawl reads each page
once per pass and keeps its bytes (up to a budget) for the fetch that follows,
which revalidates them with a conditional GET rather than a second download.

A crawl is told what the catalog holds (`recall`): a page a last crawl
recorded is asked for conditionally, and answered 304 its recorded links are
followed; so an unchanged site costs one 304 per page and reads nothing.
Those conditional GETs are sent a few ahead of the crawl (`revalidators` at
once, for the next known pages of the frontier, in its order) rather than one
round trip after another; each still waits its turn at the politeness gate,
so with a delay they are as far apart as any request — a 304 is a request
like another for the site's politeness — and only a site crawled with no
delay sees them overlap.

Fetch: a conditional GET with the validator of the version the catalog holds,
so an unchanged page answers 304 and is never extracted again.

Every failure is a ConnectorError: throttling (429/503) carries Retry-After,
timeouts and 5xx are retryable; 401/403 and 404/410 of a listed page are not
(the sync service records the page failed and asks again next pass, rather
than waiting out its backoff on every forbidden page). A page redirected out
of the scope is refused. A sitemap or crawl that lists nothing is refused
rather than read as "every page was deleted".
"""

from __future__ import annotations

import hashlib
import io
import logging
import tempfile
import threading
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO
from urllib.parse import urljoin

import urllib3
from urllib3.exceptions import (
    HTTPError,
    MaxRetryError,
    NewConnectionError,
    ResponseError,
    TimeoutError,
)
from urllib3.util import parse_url
from usp.objects.sitemap import AbstractIndexSitemap, InvalidSitemap
from usp.tree import sitemap_from_str

from groundwork.connectors.catalog import ConnectorInstance
from groundwork.connectors.port import (
    ConnectorError,
    FetchResult,
    ListingPage,
    RecalledItem,
    SourceItem,
)
from groundwork.connectors.web import (
    KIND,
    PAGE_SIZE,
    CrawlState,
    PolitenessGate,
    RobotsRules,
    WebSiteConfig,
    body_digest,
    canonical_url,
    conditional_headers,
    kept_links,
    listed_version,
    listing_vouches,
    page_filename,
    page_links,
    retry_after_seconds,
    revalidates,
    served_version,
    trusted,
)

#: bodies larger than this spill from memory to a temporary file
SPOOL_BYTES = 8 * 1024 * 1024
#: what a crawl keeps of the pages it read for the fetches of the same pass;
#: past it a fetch asks the site again (conditionally)
READ_BUDGET = 64 * 1024 * 1024
#: sitemap indexes nest; a loop of indexes stops here
MAX_SITEMAPS = 200
#: a crawl's conditional GETs of known pages in flight at once: each is a
#: round trip the crawl would otherwise wait out alone
REVALIDATORS = 4
HTML_TYPES = ("text/html", "application/xhtml+xml")
#: redirects followed for one request (httpx's default bound)
MAX_REDIRECTS = 20

logging.getLogger("usp").setLevel(logging.ERROR)  # it logs every skipped line as a warning


Response = urllib3.BaseHTTPResponse


def _media_type(response: Response) -> str | None:
    value = response.headers.get("content-type")
    return value.split(";")[0].strip().lower() if value else None


def _text(response: Response) -> str:
    """The body as text, in the charset the response names (else UTF-8)."""
    value = response.headers.get("content-type", "")
    charset = next(
        (
            part.split("=", 1)[1].strip().strip('"')
            for part in value.split(";")[1:]
            if part.strip().lower().startswith("charset=")
        ),
        "utf-8",
    )
    try:
        return response.data.decode(charset, errors="replace")
    except LookupError:  # a charset Python does not know
        return response.data.decode("utf-8", errors="replace")


def _final_url(response: Response, url: str) -> str:
    """Where the response came from after its redirects: the request's URL
    with each redirect's Location resolved in turn (urllib3's response names
    only the last path)."""
    current = url
    for step in response.retries.history if response.retries is not None else ():
        if step.redirect_location:
            current = urljoin(current, step.redirect_location)
    return current


class HttpClient:
    """GETs over keep-alive pools, one per host, as large as the requests a
    crawl has in flight; no retries of their own (the sync service retries
    with backoff), redirects followed; the environment's proxy
    (HTTP(S)_PROXY) used except for the hosts NO_PROXY names, as httpx did."""

    def __init__(self, timeout_seconds: float, user_agent: str, connections: int) -> None:
        timeout = urllib3.Timeout(total=timeout_seconds)
        retries = urllib3.Retry(
            total=None, connect=0, read=0, status=0, other=0, redirect=MAX_REDIRECTS
        )
        headers = {"User-Agent": user_agent}
        self._direct = urllib3.PoolManager(
            headers=headers, timeout=timeout, retries=retries, maxsize=connections
        )
        proxies = urllib.request.getproxies()
        proxy = proxies.get("https") or proxies.get("http")
        self._proxied = (
            urllib3.ProxyManager(
                proxy, headers=headers, timeout=timeout, retries=retries, maxsize=connections
            )
            if proxy
            else None
        )

    def get(
        self, url: str, headers: Mapping[str, str] | None = None, *, preload_content: bool = True
    ) -> Response:
        """One GET; raises urllib3's HTTPError when no response came."""
        pool = self._direct
        if self._proxied is not None and not urllib.request.proxy_bypass(parse_url(url).host or ""):
            pool = self._proxied
        # a request's headers replace the pool's in urllib3: the User-Agent goes with them
        sent = {**pool.headers, **headers} if headers else None
        return pool.request("GET", url, headers=sent, preload_content=preload_content)

    def close(self) -> None:
        self._direct.clear()
        if self._proxied is not None:
            self._proxied.clear()


def _transport_error(exc: HTTPError, item_id: str | None, url: str) -> ConnectorError:
    reason = exc.reason if isinstance(exc, MaxRetryError) else exc
    if isinstance(reason, ResponseError):  # too many redirects
        return ConnectorError(KIND, item_id, f"{reason}: {url}")
    if isinstance(reason, NewConnectionError):  # (a ConnectTimeoutError, for urllib3)
        return ConnectorError(KIND, item_id, f"cannot connect: {url}", retryable=True)
    if isinstance(reason, TimeoutError):
        return ConnectorError(KIND, item_id, f"timed out: {url}", retryable=True)
    return ConnectorError(KIND, item_id, f"{type(reason).__name__}: {url}", retryable=True)


Kept = tuple[str, bytes, str | None]  # version, body, media type


class KeptPages:
    """The bodies a crawl read while listing, oldest dropped first past a
    byte budget; the fetches of the sync service's threads take them."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._pages: OrderedDict[str, Kept] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def keep(self, item_id: str, page: Kept) -> None:
        with self._lock:
            self._pages[item_id] = page
            self._bytes += len(page[1])
            while self._bytes > self.budget and self._pages:
                _, dropped = self._pages.popitem(last=False)
                self._bytes -= len(dropped[1])

    def take(self, item_id: str) -> Kept | None:
        with self._lock:
            page = self._pages.pop(item_id, None)
            if page is not None:
                self._bytes -= len(page[1])
            return page

    def clear(self) -> None:
        with self._lock:
            self._pages.clear()
            self._bytes = 0


class WebSiteConnector:
    kind = KIND
    complete_listing = True  # a finished pass lists every live page: the rest were removed
    sorted_listing = False  # sitemap or crawl order
    lasting_locations = False  # a page moved to a new URL is not at the old one

    def __init__(
        self,
        config: WebSiteConfig,
        *,
        client: HttpClient | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
        page_size: int = PAGE_SIZE,
        revalidators: int = REVALIDATORS,
    ) -> None:
        self.config = config
        self.scope = config.scope()
        self.page_size = page_size
        self.revalidators = revalidators
        self._client = client or HttpClient(
            config.timeout_seconds, config.user_agent, revalidators + 1
        )
        gate_args = {k: v for k, v in (("clock", clock), ("sleep", sleep)) if v is not None}
        self._gate = PolitenessGate(config.delay_seconds, **gate_args)  # type: ignore[arg-type]
        self._robots: dict[str, RobotsRules] = {}
        self._kept = KeptPages(READ_BUDGET)
        self._recalled: Mapping[str, RecalledItem] = {}

    def recall(self, known: Mapping[str, RecalledItem]) -> None:
        """The pages the catalog holds, with the version and links a crawl
        recorded: the next crawl revalidates them (groundwork.connectors.web)."""
        self._recalled = dict(known)

    @property
    def requests(self) -> int:
        """Every request sent: what a bench counts."""
        return self._gate.sent

    def close(self) -> None:
        self._client.close()

    # -- HTTP ---------------------------------------------------------------

    def _get(
        self, url: str, item_id: str | None, headers: dict[str, str] | None = None
    ) -> Response:
        """One polite GET, its body read; transport failures become retryable
        ConnectorErrors."""
        self._gate.wait()
        try:
            return self._client.get(url, headers)
        except HTTPError as exc:
            raise _transport_error(exc, item_id, url) from exc

    @staticmethod
    def _refuse(response: Response, item_id: str | None) -> ConnectorError:
        status = response.status
        retry_after = retry_after_seconds(response.headers.get("retry-after"))
        retryable = status in (408, 425, 429) or status >= 500
        reason = {403: "forbidden", 404: "not found", 410: "gone", 429: "throttled"}.get(
            status, f"HTTP {status}"
        )
        return ConnectorError(
            KIND, item_id, f"{reason} ({status}) at {response.url}", retry_after, retryable
        )

    def _rules(self, url: str) -> RobotsRules:
        parts = parse_url(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._robots:
            response = self._get(f"{origin}/robots.txt", None)
            if response.status >= 500 or response.status == 429:
                raise self._refuse(response, None)  # unreachable robots.txt: crawl nothing
            text = _text(response) if response.status == 200 else None
            rules = RobotsRules(text)
            delay = rules.crawl_delay(self.config.user_agent)
            if delay is not None and delay > self._gate.delay_seconds:
                self._gate.delay_seconds = delay
            self._robots[origin] = rules
        return self._robots[origin]

    def _allowed(self, url: str) -> bool:
        return self.scope.admits(url) and self._rules(url).allows(url, self.config.user_agent)

    # -- listing ------------------------------------------------------------

    def _sitemap_pages(self) -> list[tuple[str, str | None]]:
        """Every (canonical URL, lastmod) the sitemaps list, in their order."""
        pending = list(self.config.sitemaps)
        pages: dict[str, str | None] = {}
        visited = 0
        while pending and visited < MAX_SITEMAPS:
            url = pending.pop(0)
            visited += 1
            response = self._get(url, None)
            if response.status != 200:
                raise self._refuse(response, None)
            tree = sitemap_from_str(_text(response))
            if isinstance(tree, AbstractIndexSitemap):
                pending.extend(sub.url for sub in tree.sub_sitemaps)
                continue
            if isinstance(tree, InvalidSitemap):
                raise ConnectorError(KIND, None, f"unreadable sitemap at {url}")
            found = 0
            for page in tree.all_pages():
                found += 1
                lastmod = page.last_modified.isoformat() if page.last_modified else None
                pages.setdefault(canonical_url(page.url), lastmod)
            if not found:
                raise ConnectorError(KIND, None, f"sitemap at {url} lists no page")
        return list(pages.items())

    def _item(
        self,
        url: str,
        version: str,
        size: int | None,
        media: str | None,
        links: tuple[str, ...] | None = None,
    ) -> SourceItem:
        where = {"url": url, "filename": page_filename(url, media)}
        return SourceItem(url, version, size, media, self.config.subjects, where, links)

    def list_pages(self, cursor: str | None) -> Iterator[ListingPage]:
        if self.config.crawl:
            yield from self._crawl_pages(cursor)
        else:
            yield from self._sitemap_listing(cursor)

    def _sitemap_listing(self, cursor: str | None) -> Iterator[ListingPage]:
        """No page is requested: the sitemap names them. The cursor counts the
        pages listed, so a resumed pass skips that many of the same order."""
        state = CrawlState.decode(cursor) if cursor else CrawlState()
        pages = [(url, mod) for url, mod in self._sitemap_pages() if self._allowed(url)]
        pages = pages[: self.config.max_pages]
        while True:
            chunk = pages[state.listed : state.listed + self.page_size]
            state.listed += len(chunk)
            items = [self._item(u, listed_version(u, m, self.config), None, None) for u, m in chunk]
            if state.listed >= len(pages):
                yield ListingPage(items, (), None)
                return
            yield ListingPage(items, (), state.encode())

    def _crawl_pages(self, cursor: str | None) -> Iterator[ListingPage]:
        """Breadth first from the sitemaps' pages and the start URLs; the
        cursor is the whole frontier, so a resumed crawl neither revisits nor
        loses a page."""
        state = CrawlState.decode(cursor) if cursor else CrawlState()
        self._kept.clear()
        if cursor is None:
            seeds = [url for url, _ in self._sitemap_pages()] if self.config.sitemaps else []
            state.enqueue([*seeds, *(canonical_url(u) for u in self.config.start_urls)], self.scope)
        batch: list[SourceItem] = []
        ahead: dict[str, Future[Response]] = {}
        pool = ThreadPoolExecutor(self.revalidators) if self.revalidators > 1 else None
        try:
            while state.frontier and state.listed < self.config.max_pages:
                if pool is not None:
                    self._revalidate_ahead(state, ahead, pool)
                url = state.frontier.pop(0)
                sent = ahead.pop(url, None)
                item = self._crawled(url, state, sent) if self._allowed(url) else None
                if item is None:
                    continue
                state.listed += 1
                batch.append(item)
                if len(batch) >= self.page_size and state.frontier:
                    yield ListingPage(batch, (), state.encode())
                    batch = []
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        if state.listed == 0:  # never "the site is gone": the start is unreachable
            raise ConnectorError(KIND, None, "no page could be read from the start URLs")
        yield ListingPage(batch, (), None)

    def _revalidate_ahead(
        self,
        state: CrawlState,
        ahead: dict[str, Future[Response]],
        pool: ThreadPoolExecutor,
    ) -> None:
        """Sends the conditional GETs of the next known pages of the frontier
        (no more than the cap leaves to list), so their round trips overlap;
        the crawl takes their answers in its own order."""
        room = min(self.revalidators, self.config.max_pages - state.listed)
        for url in state.frontier[:room]:
            if url in ahead:
                continue
            known = self._recalled.get(url)
            if known is None or known.links is None or not revalidates(known.version):
                continue
            if not self._allowed(url):
                continue
            headers = conditional_headers(known.version)
            ahead[url] = pool.submit(self._get, url, url, headers)

    def _crawled(
        self, url: str, state: CrawlState, sent: Future[Response] | None = None
    ) -> SourceItem | None:
        """Reads one page of a crawl: its links join the frontier, its bytes
        wait for this pass's fetch. A page a last crawl recorded is asked for
        conditionally (`sent`: already asked, ahead of the crawl): unchanged
        (304), its recorded links are followed and it is listed as it is
        known. A dead link (404/410) is no page."""
        known = self._recalled.get(url)
        if known is not None and known.links is not None and revalidates(known.version):
            if sent is not None:
                response = sent.result()
            else:
                response = self._get(url, url, conditional_headers(known.version))
            if response.status == 304 and canonical_url(_final_url(response, url)) == url:
                state.seen.add(url)
                state.enqueue(known.links, self.scope)
                return self._item(url, known.version, None, None, known.links)
            if response.status == 304:  # redirected elsewhere meanwhile: read it whole
                response = self._get(url, url)
        else:
            response = self._get(url, url)
        if response.status in (404, 410):
            return None
        if response.status != 200:
            raise self._refuse(response, url)
        page_id = canonical_url(_final_url(response, url))
        media = _media_type(response)
        body = response.data
        links: tuple[str, ...] | None = ()
        if media in HTML_TYPES:
            found = page_links(body, page_id)
            if found.canonical and self.scope.admits(found.canonical):
                page_id = found.canonical
            state.enqueue(found.links, self.scope)
            links = kept_links(found.links, self.scope)
        if page_id != url and (page_id in state.seen or not self.scope.admits(page_id)):
            return None  # reached by another name: the canonical one is (or will be) listed
        state.seen.add(page_id)
        version = served_version(response.headers, body_digest([body]))
        self._kept.keep(page_id, (version, body, media))
        return self._item(page_id, version, len(body), media, links)

    # -- fetch --------------------------------------------------------------

    def fetch(self, item: SourceItem, known_version: str | None) -> FetchResult:
        """A conditional GET. When a crawl read the page while listing it, the
        validator is the one it read: a 304 then serves the bytes kept (no
        body sent twice), and a page gone meanwhile is still the item's error."""
        kept = self._kept.take(item.item_id)
        if kept is not None and kept[0] == known_version:
            return FetchResult(None, kept[0], kept[2])  # read just now, as the catalog has it
        if kept is None and listing_vouches(item.version, known_version):
            return FetchResult(None, item.version, item.media_type)
        validator = kept[0] if kept is not None else known_version
        url = item.location.get("url", item.item_id)
        response, stream, digest = self._download(url, item.item_id, validator)
        if response.status == 304 and validator is not None:
            if kept is not None:
                return FetchResult(io.BytesIO(kept[1]), kept[0], kept[2])
            served = item.version if trusted(item.version) else validator
            return FetchResult(None, served, item.media_type)
        if stream is None:
            raise self._refuse(response, item.item_id)
        if not self.scope.admits(canonical_url(_final_url(response, url))):
            stream.close()
            raise ConnectorError(
                KIND, item.item_id, f"redirected out of the scope to {response.url}"
            )
        # a lastmod version is served as listed: the next listing then compares equal
        version = (
            item.version if trusted(item.version) else served_version(response.headers, digest)
        )
        if version == known_version:  # no validator, same bytes
            stream.close()
            return FetchResult(None, version, _media_type(response))
        return FetchResult(stream, version, _media_type(response))

    def _download(
        self, url: str, item_id: str, known_version: str | None
    ) -> tuple[Response, BinaryIO | None, str]:
        """A conditional GET whose body is spooled (memory, then a temporary
        file) and digested as it arrives, refused past the page cap."""
        self._gate.wait()
        limit = self.config.max_page_bytes
        try:
            response = self._client.get(
                url, conditional_headers(known_version), preload_content=False
            )
        except HTTPError as exc:
            raise _transport_error(exc, item_id, url) from exc
        try:
            if response.status != 200:
                response.drain_conn()
                return response, None, ""
            spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - the caller closes it
            digest = hashlib.sha256()
            for chunk in response.stream(64 * 1024):
                digest.update(chunk)
                spool.write(chunk)
                if spool.tell() > limit:
                    spool.close()
                    raise ConnectorError(KIND, item_id, f"over the page cap of {limit} bytes")
            spool.seek(0)
            return response, spool, digest.hexdigest()  # type: ignore[return-value]
        except HTTPError as exc:
            raise _transport_error(exc, item_id, url) from exc
        finally:
            response.release_conn()


def build_web(instance: ConnectorInstance) -> WebSiteConnector:
    """The connector of a stored instance (for resources/connectors/factory.py's
    BUILDERS); a site needs no secret."""
    return WebSiteConnector(WebSiteConfig.from_config(instance.config))
