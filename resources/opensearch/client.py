"""The OpenSearch client a keyword index talks through, and the translation of
its errors into the project's at the boundary: nothing above this adapter sees
an opensearchpy exception.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from opensearchpy import OpenSearch, helpers
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import ConnectionTimeout, TransportError

from groundwork.errors import CapacityExhausted, DocumentRefused, EngineUnavailable, StoreError
from resources.opensearch.wire import FastJSONSerializer


@contextlib.contextmanager
def translated(action: str) -> Iterator[None]:
    try:
        yield
    except (OSConnectionError, ConnectionTimeout) as exc:
        raise EngineUnavailable(f"OpenSearch unavailable while {action}: {exc}") from exc
    except TransportError as exc:
        raise StoreError(f"OpenSearch refused {action}: {exc}") from exc
    except helpers.BulkIndexError as exc:
        raise bulk_refusal(action, exc) from exc


def bulk_refusal(action: str, exc: helpers.BulkIndexError) -> StoreError:
    """A bulk whose every failed item was refused for its content (4xx other
    than 429: mapping, immense term) is the documents' problem; anything else
    (overload, shard failures) is the engine's. The message names the error
    types and ids, never the documents' text."""
    refused: list[str] = []
    reasons: list[str] = []
    content_only = True
    for item in exc.errors:
        result: dict[str, Any] = next(iter(item.values()), {}) if isinstance(item, dict) else {}
        status = int(result.get("status", 0) or 0)
        error = result.get("error") or {}
        if not (400 <= status < 500 and status != 429):
            content_only = False
        refused.append(str(result.get("_id", "")))
        if len(reasons) < 3:
            detail = error.get("reason", "") if isinstance(error, dict) else str(error)
            kind = error.get("type", "") if isinstance(error, dict) else ""
            reasons.append(f"{kind}: {str(detail)[:200]}")
    message = f"OpenSearch refused {len(exc.errors)} document(s) while {action}: {reasons}"
    if content_only and refused:
        return DocumentRefused(message, tuple(refused))
    return StoreError(message)


#: how OpenSearch words the refusal of an index over cluster.max_shards_per_node
SHARD_LIMIT = re.compile(r"currently has \[(\d+)\]/\[(\d+)\] maximum (?:normal )?shards open")


def cluster_full(tenant_id: str, refusal: re.Match[str]) -> CapacityExhausted:
    open_shards, limit = int(refusal[1]), int(refusal[2])
    return CapacityExhausted(
        f"OpenSearch cannot take tenant {tenant_id}'s keyword index: the cluster holds "
        f"{open_shards} of its {limit} shards (cluster.max_shards_per_node times the data "
        "nodes; each tenant index is one shard, and one more per replica). Add a node, or "
        "give the nodes more heap and a higher limit (for the embedded node "
        "GROUNDWORK_OPENSEARCH_HEAP raises both)",
        limit,
    )


#: a health probe answers within this or reports the cluster unavailable
HEALTH_TIMEOUT_SECONDS = 5


#: A search that has no answer within this is retried on the next node (the
#: silent one is left out for `dead_timeout`). A node that hangs (SIGSTOP, a long
#: GC pause) keeps its sockets open, so only a timeout notices it: with the
#: client's 30 s, bench/cluster_failover.py --hang (3 nodes, 8 clients, a 20 s
#: hang) had every client stuck on the hung node for the whole 20 s. A keyword
#: search here answers in milliseconds; the bound leaves room for a loaded machine.
SEARCH_TIMEOUT_SECONDS = 3


#: HTTP connections kept open per node: as many as searches a process runs at
#: once (the keyword legs' 16 threads). urllib3 keeps one by default, and
#: every search beyond the first in flight opened a TCP connection and closed
#: it on return: 1,150 in 20 s at 8 clients in bench/search_load.py.
CONNECTIONS_PER_NODE = 16


def client_for(
    url: str, http_auth: tuple[str, str] | None = None, ca_certs: str | None = None
) -> OpenSearch:
    """`url` may name several nodes of one cluster, comma-separated.

    A request that cannot reach a node (refused, reset: a node killed), that
    times out, or that a node answers 502/503/504 is retried at once on the
    next node, up to once per node; the failing node is left out for
    `dead_timeout` seconds (doubling while it keeps failing) and then tried
    again, so a restarted node gets traffic back. Measured with
    bench/cluster_failover.py: SIGKILL of a data node under 8 searching clients
    costs 0 failed searches (2 nodes, the one not holding the cluster manager's
    vote; 3 nodes, any one). `http_auth` and `ca_certs` are for an
    authenticating HTTPS front (resources/engines/nginx.py): basic auth, and
    the CA that signed its certificate."""
    hosts = [u.strip() for u in url.split(",") if u.strip()]
    if not hosts:
        raise ValueError("no OpenSearch URL given")
    secured: dict[str, Any] = {}
    if http_auth:
        secured["http_auth"] = http_auth
    if ca_certs:
        secured.update(ca_certs=ca_certs, verify_certs=True)
    return OpenSearch(
        hosts=hosts,
        timeout=30,
        max_retries=max(2, len(hosts)),
        retry_on_timeout=True,
        retry_on_status=(502, 503, 504),
        dead_timeout=30,
        pool_maxsize=CONNECTIONS_PER_NODE,
        serializer=FastJSONSerializer(),
        **secured,
    )
