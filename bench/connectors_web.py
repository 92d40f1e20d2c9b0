"""The web connector on a loopback site (issue #34's goal): N pages (2,000 by
default) listed by the site's sitemap, synced through connector_sync into a
bench database; then a second pass over the unchanged site, whose pages are
asked for with conditional GETs (goal: <= 10% of the first pass's time, 0
re-extractions). Extraction after each pass counts what the pass left to
extract (the first pass's is setup, not in its time).

    uv run python bench/connectors_web.py [--pages 2000] [--no-lastmod | --crawl]

The site's sitemap gives each page's lastmod, so by default an unchanged page
costs no request on the second pass; `--no-lastmod` leaves it out, so every
page is revalidated by a conditional GET (answered 304). `--crawl` lists the site by crawling from an index page instead: the first
crawl reads every page to find its links; the links are kept with the pages,
so the second asks each page conditionally (304) and follows its recorded
links, reading nothing. A crawl's second pass runs twice over the unchanged
site, in the same run: its conditional GETs one after another (as before
they were sent ahead; `revalidators=1`), then a few in flight at once (the
connector's default). It uses the tests' kept
engines (.groundwork-test) or starts them, in a database of its own.

The site is served by a process of its own, as any real site is: served by
a thread of the bench's process (`--site-thread`, as before 2026-12-03), the
crawl's client and the site's server shared one GIL, a round trip cost CPU
rather than latency, and requests in flight only added contention (sent
ahead was slower than one at a time on a quiet machine).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection

from bench.engines import bench_platform
from groundwork.connectors.catalog import ConnectorInstance
from groundwork.connectors.web import WebSiteConfig
from groundwork.services.connector_sync import PassReport, run_pass
from groundwork.stages.extraction import extract_pending
from resources.composition.platform import Platform
from resources.composition.settings import PROJECT_ROOT, GroundworkSettings
from resources.connectors.web_site import REVALIDATORS, WebSiteConnector
from resources.postgres.connectors import PostgresConnectorCatalog
from testbed.loopback_http import loopback_server
from testbed.web_site import LoopbackSite, html_page

DATABASE = "groundwork_bench_connectors_web"


def build_site(pages: int) -> LoopbackSite:
    site = LoopbackSite()
    site.index = True
    for n in range(pages):
        text = f"Page {n} of the handbook. Its marker is wq{n}k. " * 20
        site.put(f"/handbook/{n:05d}", html_page(f"Handbook page {n}", text))
    return site


def _serve(site: LoopbackSite, pipe: Connection) -> None:
    """The site process: serves until told to stop; answers "log" with the
    statuses served since the last "clear"."""
    with loopback_server(site.handler()) as root:
        pipe.send(root)
        while (command := pipe.recv()) != "stop":
            if command == "clear":
                site.log.clear()
                pipe.send(None)
            else:
                pipe.send([status for _, status in site.log])


@contextmanager
def served(site: LoopbackSite, apart: bool) -> Iterator[tuple[str, Connection | None]]:
    """The site's root URL, and the pipe to its process when `apart` (forked
    before any thread or pool of the bench exists: it takes the site as built)."""
    if not apart:
        with loopback_server(site.handler()) as root:
            yield root, None
        return
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe()
    process = context.Process(target=_serve, args=(site, theirs), daemon=True)
    process.start()
    try:
        yield ours.recv(), ours
    finally:
        ours.send("stop")
        process.join(timeout=10)
        if process.is_alive():
            process.terminate()


def answered(site: LoopbackSite, pipe: Connection | None) -> list[int]:
    """The statuses the site served since it was last cleared."""
    if pipe is None:
        return [status for _, status in site.log]
    pipe.send("log")
    statuses: list[int] = pipe.recv()
    return statuses


def clear(site: LoopbackSite, pipe: Connection | None) -> None:
    if pipe is None:
        site.log.clear()
    else:
        pipe.send("clear")
        pipe.recv()


def timed_pass(
    platform: Platform,
    catalog: PostgresConnectorCatalog,
    instance: ConnectorInstance,
    connector: WebSiteConnector,
) -> tuple[PassReport, float, int]:
    """One pass: its report, its seconds and the requests it sent."""
    sent = connector.requests
    started = time.perf_counter()
    report = run_pass(platform, catalog, instance, connector)
    return report, time.perf_counter() - started, connector.requests - sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--crawl", action="store_true")
    parser.add_argument("--no-lastmod", action="store_true")
    parser.add_argument(
        "--site-thread", action="store_true", help="serve the site from a thread of this process"
    )
    args = parser.parse_args()
    env = dict(os.environ)
    env.setdefault("GROUNDWORK_HOME", str(PROJECT_ROOT / ".groundwork-test"))
    env.setdefault("GROUNDWORK_OPENSEARCH_PORT", "9211")
    env.setdefault("GROUNDWORK_OPENSEARCH_TRANSPORT_PORT", "9311")
    settings = GroundworkSettings.from_env(env)
    site = build_site(args.pages)
    site.sitemap_lastmod = not args.no_lastmod
    with (
        served(site, apart=not args.site_thread) as (root, pipe),
        bench_platform(settings, DATABASE, f"gwbenchweb-{uuid.uuid4().hex[:6]}") as platform,
    ):
        tenant = f"bench-web-{uuid.uuid4().hex[:6]}"
        platform.catalog.ensure_tenant(tenant, tenant, settings.default_model_key)
        catalog = PostgresConnectorCatalog(platform.pool)
        instance = catalog.add_instance(
            ConnectorInstance(
                f"con_{uuid.uuid4().hex[:12]}",
                tenant,
                "web",
                "handbook",
                {},
                {},
                (f"tenant:{tenant}",),
            )
        )
        if args.crawl:
            # the index page is a page too
            config = WebSiteConfig(
                start_urls=(f"{root}/",), crawl=True, max_pages=args.pages + 1, delay_seconds=0.0
            )
        else:
            config = WebSiteConfig(
                sitemaps=(f"{root}/sitemap.xml",), max_pages=args.pages, delay_seconds=0.0
            )
        connector = WebSiteConnector(config)
        mode = (
            "crawl" if args.crawl else "sitemap" + (" without lastmod" if args.no_lastmod else "")
        ) + (", site in a thread" if args.site_thread else "")

        first, first_s, first_requests = timed_pass(platform, catalog, instance, connector)
        started = time.perf_counter()
        extracted = extract_pending(platform.catalog, platform.blobs, tenant).processed
        extract_s = time.perf_counter() - started
        print(
            f"{mode}, first pass: {first_s:.2f} s, {first_requests} requests, registered "
            f"{first.changed}, reads {first.reads}; extracted after it (setup): {extracted} "
            f"in {extract_s:.2f} s"
        )
        rounds = [("", connector.revalidators)]
        if args.crawl:
            rounds = [(" (one conditional GET at a time)", 1), (" (sent ahead)", REVALIDATORS)]
        for how, revalidators in rounds:
            connector.revalidators = revalidators
            clear(site, pipe)
            second, second_s, second_requests = timed_pass(platform, catalog, instance, connector)
            statuses = answered(site, pipe)
            extracted = extract_pending(platform.catalog, platform.blobs, tenant).processed
            print(
                f"{mode}, second pass over the unchanged site{how}: {second_s:.2f} s "
                f"({100 * second_s / first_s:.1f}% of the first, "
                f"{100 * second_s / (first_s + extract_s):.1f}% of the first with its "
                f"extraction), {second_requests} requests "
                f"({statuses.count(304)} answered 304, {statuses.count(200)} 200), registered "
                f"{second.changed}, reads {second.reads}; re-extractions: {extracted}"
            )
        connector.close()


if __name__ == "__main__":
    main()
