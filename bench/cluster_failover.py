"""An OpenSearch cluster loses a node under search load: how long searches fail.

    uv run python bench/cluster_failover.py [--nodes 2] [--kill other|manager|both]
        [--clients 8] [--tenants 6] [--docs 40] [--down-seconds 10] [--replicas N] [--hang]

Starts a local cluster of --nodes members with the project's launcher (ports
GROUNDWORK_OPENSEARCH_PORT + 1.. and GROUNDWORK_OPENSEARCH_TRANSPORT_PORT + 1..,
home GROUNDWORK_HOME/bench-cluster, removed at the end), indexes the tenants
through the adapter (one replica by default: auto-expanded 0-1), then, for each
kill asked for, runs --clients threads searching through the adapter, kills
one member with SIGKILL (the elected cluster manager or another member),
restarts it after --down-seconds and waits for green. Prints the failover
window (kill until the end of the last failed search), failed searches during
it and after it, searches answered while the node was down, time to green
after the restart, and per-tenant document counts before and after. With
--hang the member is stopped (SIGSTOP) for --down-seconds and continued
(SIGCONT) instead of killed and restarted: a node that hangs (a long GC pause)
keeps its sockets open, so a client sees silence, not a refusal; the slowest
search while it hangs and the searches slower than 2 s are printed too.

The scenario itself is testbed/cluster_failover.py, shared with the e2e test.
"""

from __future__ import annotations

import argparse
import sys
import uuid

from bench.engines import scratch_home  # noqa: E402
from resources.composition.settings import PROJECT_ROOT, GroundworkSettings  # noqa: E402
from resources.engines.opensearch import EmbeddedOpenSearchCluster  # noqa: E402
from resources.opensearch.keyword_index import OpenSearchKeywordIndex, client_for  # noqa: E402
from testbed.cluster_failover import FailoverOutcome, index_tenants, lose_a_node  # noqa: E402


def report(outcome: FailoverOutcome, hang: bool = False) -> None:
    window = outcome.failover_window
    role = "the elected cluster manager" if outcome.victim_was_manager else "not the manager"
    fault = "hung (SIGSTOP, SIGCONT after the down time)" if hang else "killed with SIGKILL"
    print(f"{outcome.victim} ({role}) {fault}")
    print(f"  failover window                 {window:6.2f} s")
    print(
        f"  failed searches in the window   {outcome.failed_between(outcome.killed_at, outcome.killed_at + window + 1e-9):6d}"
    )
    print(f"  failed searches after it        {outcome.failed_after_window:6d}")
    print(
        f"  searches answered, node down    {outcome.answered_between(outcome.killed_at, outcome.restarted_at):6d}"
    )
    print(
        f"  searches answered, all told     {sum(1 for r in outcome.records if r.error is None):6d}"
    )
    print(
        f"  slowest search, node down       "
        f"{outcome.slowest_between(outcome.killed_at, outcome.restarted_at):6.2f} s"
    )
    print(f"  searches slower than 2 s        {outcome.slower_than(2.0):6d}")
    print(f"  restart to green                {outcome.time_to_green:6.2f} s")
    same = outcome.counts_before == outcome.counts_after
    print(
        f"  documents before / after        {sum(outcome.counts_before.values())} / "
        f"{sum(outcome.counts_after.values())} (per tenant {'equal' if same else 'DIFFERENT'})"
    )
    for error in outcome.errors[:5]:
        print(f"  error: {error}")


def main() -> int:
    settings = GroundworkSettings.from_env()
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--kill", choices=("other", "manager", "both"), default="both")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--tenants", type=int, default=6)
    parser.add_argument("--docs", type=int, default=40)
    parser.add_argument("--down-seconds", type=float, default=10.0)
    parser.add_argument(
        "--hang", action="store_true", help="SIGSTOP the node (a hang), not SIGKILL (a crash)"
    )
    parser.add_argument("--heap", default="384m")
    parser.add_argument(
        "--replicas", type=int, default=None, help="fixed replica count (default: auto 0-1)"
    )
    args = parser.parse_args()
    with scratch_home(settings.home / "bench-cluster") as home:
        cluster = EmbeddedOpenSearchCluster(
            home,
            PROJECT_ROOT / "engines" / "opensearch",
            http_ports=[settings.opensearch_http_port + 1 + n for n in range(args.nodes)],
            transport_ports=[settings.opensearch_transport_port + 1 + n for n in range(args.nodes)],
            heap=args.heap,
        )
        try:
            cluster.start()
            keywords = OpenSearchKeywordIndex(
                client_for(cluster.url), f"gwbench-{uuid.uuid4().hex[:6]}", replicas=args.replicas
            )
            keywords.ensure_schema()
            tenants = [f"fo-{n}" for n in range(args.tenants)]
            index_tenants(keywords, tenants, args.docs)
            print(
                f"{args.nodes}-node cluster, {args.tenants} tenants, "
                f"{sum(len(keywords.chunk_ids(t)) for t in tenants)} documents, "
                f"replicas {'auto 0-1' if args.replicas is None else args.replicas}, "
                f"{args.clients} clients searching through the adapter"
            )
            kills = ["other", "manager"] if args.kill == "both" else [args.kill]
            for kill in kills:
                outcome = lose_a_node(
                    cluster,
                    keywords,
                    tenants,
                    kill_manager=kill == "manager",
                    clients=args.clients,
                    down_seconds=args.down_seconds,
                    hang=args.hang,
                )
                report(outcome, args.hang)
        finally:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
