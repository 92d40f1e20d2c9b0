"""A second crawl sends its conditional GETs ahead (resources/connectors/
web_site.py, `revalidators`): several known pages are asked at once, and the
listing is what one request after another gives — same pages, same order,
same versions, every one answered 304."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler

from groundwork.connectors.port import RecalledItem
from groundwork.connectors.web import WebSiteConfig
from resources.connectors.web_site import WebSiteConnector
from testbed.loopback_http import loopback_server
from testbed.web_site import LoopbackSite, html_page


class SlowSite(LoopbackSite):
    """Each conditional GET takes 30 ms; the most requests in flight at once is kept."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.most_in_flight = 0
        self._count = threading.Lock()

    def answer(self, request: BaseHTTPRequestHandler) -> int:
        conditional = "If-None-Match" in request.headers
        with self._count:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if conditional:
                time.sleep(0.03)
            return super().answer(request)
        finally:
            with self._count:
                self.in_flight -= 1


def crawl(connector: WebSiteConnector) -> list[tuple[str, str]]:
    return [(i.item_id, i.version) for p in connector.list_pages(None) for i in p.items]


def test_a_second_crawl_revalidates_ahead_and_lists_the_same() -> None:
    site = SlowSite()
    site.index = True
    for n in range(12):
        site.put(f"/guide/{n:02d}", html_page(f"Guide {n}", f"guide page {n}"))
    with loopback_server(site.handler()) as root:
        config = WebSiteConfig(start_urls=(f"{root}/",), crawl=True, delay_seconds=0.0)
        first = WebSiteConnector(config, page_size=5)
        pages = [i for p in first.list_pages(None) for i in p.items]
        known = {i.item_id: RecalledItem(i.version, i.links) for i in pages}
        listings = {}
        for revalidators in (1, 4):
            connector = WebSiteConnector(config, page_size=5, revalidators=revalidators)
            connector.recall(known)
            site.log.clear()
            site.most_in_flight = 0
            listings[revalidators] = crawl(connector)
            assert [status for _, status in site.log if status != 404] == [304] * len(pages)
            if revalidators == 1:
                assert site.most_in_flight == 1
            else:
                assert site.most_in_flight > 1, "the conditional GETs overlap"
        assert listings[1] == listings[4] == [(i.item_id, i.version) for i in pages]
