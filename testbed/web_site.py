"""A small web site served on loopback for the web connector's tests and its
bench: pages that can be changed, removed and renamed while it runs, a
generated sitemap with lastmod, robots.txt, validators (ETag and/or
Last-Modified) honoured by conditional GETs, and faults on demand (a status
with headers, or a stall past the client's timeout). Every request is logged
with its answer, so a test can assert what was asked and what was served."""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler
from xml.sax.saxutils import escape


@dataclass
class SitePage:
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    modified: float = field(default_factory=lambda: float(int(time.time())))

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'


@dataclass
class Fault:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    stall_seconds: float = 0.0


class LoopbackSite:
    """The site's state; `handler()` is the request handler class to serve it."""

    def __init__(self, *, etags: bool = True, last_modified: bool = True) -> None:
        self.pages: dict[str, SitePage] = {}
        self.robots: str | None = None
        self.faults: dict[str, Fault] = {}
        self.redirects: dict[str, str] = {}
        self.etags = etags
        self.last_modified = last_modified
        self.sitemap_lastmod = True
        self.index = False  # serve "/" as a page linking every page (what a crawl starts from)
        self.log: list[tuple[str, int]] = []
        self.agents: list[str] = []  # the User-Agent of every request, in order
        self._lock = threading.Lock()
        self._clock = 0

    def put(
        self, path: str, body: bytes | str, content_type: str = "text/html; charset=utf-8"
    ) -> None:
        raw = body.encode() if isinstance(body, str) else body
        with self._lock:
            # each write is a second later than the last, so Last-Modified moves
            self._clock += 1
            self.pages[path] = SitePage(raw, content_type, float(int(time.time())) + self._clock)

    def remove(self, path: str) -> None:
        with self._lock:
            self.pages.pop(path, None)

    def requests_to(self, path: str) -> list[int]:
        return [status for logged, status in self.log if logged == path]

    def sitemap_xml(self, root: str) -> bytes:
        rows = []
        for path, page in sorted(self.pages.items()):
            lastmod = (
                f"<lastmod>{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(page.modified))}</lastmod>"
                if self.sitemap_lastmod
                else ""
            )
            rows.append(f"<url><loc>{escape(root + path)}</loc>{lastmod}</url>")
        return (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(rows)
            + "</urlset>"
        ).encode()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out in two writes: with Nagle's algorithm the
            # body waits for the client's delayed ACK (~40 ms a page)
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: object) -> None:  # quiet
                return

            def do_GET(self) -> None:
                site.answer(self)

        return Handler

    def answer(self, request: BaseHTTPRequestHandler) -> int:
        path = request.path
        fault = self.faults.get(path)
        if fault is not None:
            time.sleep(fault.stall_seconds)
            return self._send(request, fault.status, b"fault", "text/plain", fault.headers)
        if path in self.redirects:
            return self._send(request, 301, b"", "text/plain", {"Location": self.redirects[path]})
        if path == "/robots.txt":
            if self.robots is None:
                return self._send(request, 404, b"no robots", "text/plain")
            return self._send(request, 200, self.robots.encode(), "text/plain")
        if path == "/sitemap.xml":
            root = f"http://{request.headers.get('Host')}"
            return self._send(request, 200, self.sitemap_xml(root), "application/xml")
        page = self.pages.get(path)
        if page is None and path == "/" and self.index:
            page = SitePage(html_page("Index", "every page", tuple(sorted(self.pages))).encode())
        if page is None:
            return self._send(request, 404, b"not found", "text/plain")
        headers = {}
        if self.etags:
            headers["ETag"] = page.etag
        if self.last_modified:
            headers["Last-Modified"] = formatdate(page.modified, usegmt=True)
        if self._not_modified(request, page):
            return self._send(request, 304, b"", None, headers)
        return self._send(request, 200, page.body, page.content_type, headers)

    def _not_modified(self, request: BaseHTTPRequestHandler, page: SitePage) -> bool:
        match = request.headers.get("If-None-Match")
        if match is not None and self.etags:
            return page.etag in [tag.strip() for tag in match.split(",")]
        since = request.headers.get("If-Modified-Since")
        if since is not None and self.last_modified:
            try:
                return page.modified <= parsedate_to_datetime(since).timestamp()
            except (TypeError, ValueError):
                return False
        return False

    def _send(
        self,
        request: BaseHTTPRequestHandler,
        status: int,
        body: bytes,
        content_type: str | None,
        headers: dict[str, str] | None = None,
    ) -> int:
        # logged before the answer leaves, so a client that has it sees the entry
        with self._lock:
            self.log.append((request.path, status))
            self.agents.append(request.headers.get("User-Agent", ""))
        request.send_response(status)
        for name, value in (headers or {}).items():
            request.send_header(name, value)
        if content_type:
            request.send_header("Content-Type", content_type)
        if status != 304:
            request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        if status != 304:
            request.wfile.write(body)
        return status


def html_page(
    title: str, text: str, links: tuple[str, ...] = (), canonical: str | None = None
) -> str:
    head = f"<title>{escape(title)}</title>"
    if canonical:
        head += f'<link rel="canonical" href="{escape(canonical)}">'
    anchors = "".join(f'<a href="{escape(href)}">{escape(href)}</a> ' for href in links)
    return f"<!doctype html><html><head>{head}</head><body><h1>{escape(title)}</h1><p>{escape(text)}</p>{anchors}</body></html>"
