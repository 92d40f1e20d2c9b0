package dev.groundwork.opensearch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.index.mapper.MapperExtrasPlugin;
import org.opensearch.index.reindex.ReindexPlugin;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

/**
 * A genuine single-node OpenSearch 2.19 server started in-process from the
 * Maven Central jars. The distribution tarball is not reachable here, so this
 * launcher does what the distribution's bootstrap does minus the bootstrap
 * checks (which refuse to run as root, as CI does) and JarHell.
 *
 * Usage: EmbeddedNode <home> <httpPort> <transportPort> [clusterName] [setting=value ...]
 *
 * Alone it is a single node (discovery.type=single-node). Settings given as
 * key=value after the cluster name are put over the defaults, so the same
 * class starts a member of a local cluster: node.name, discovery.type=zen,
 * discovery.seed_hosts (the other members' transport addresses) and
 * cluster.initial_cluster_manager_nodes (resources/engines/opensearch.py
 * passes them), or raises cluster.max_shards_per_node.
 * Prints "GROUNDWORK-OPENSEARCH-READY <port>" once the node has started;
 * SIGTERM closes the node cleanly through a shutdown hook.
 */
public final class EmbeddedNode {

    /** Node's constructor taking plugin classes is protected: this subclass exposes it. */
    static final class PluginNode extends Node {
        PluginNode(Environment environment, List<Class<? extends Plugin>> plugins) {
            super(environment, plugins, true);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println(
                    "usage: EmbeddedNode <home> <httpPort> <transportPort> [clusterName] [setting=value ...]");
            System.exit(2);
        }
        // The cluster name identifies the home that owns the node, so a second
        // checkout on the same port is recognised instead of silently reused.
        String clusterName = args.length >= 4 ? args[3] : "groundwork-embedded";
        Path home = Paths.get(args[0]).toAbsolutePath();
        Path data = home.resolve("data");
        Path logs = home.resolve("logs");
        Path config = home.resolve("config");
        Files.createDirectories(data);
        Files.createDirectories(logs);
        Files.createDirectories(config);
        Files.createDirectories(home.resolve("plugins"));
        Files.createDirectories(home.resolve("modules"));

        Settings.Builder builder = Settings.builder()
                .put("cluster.name", clusterName)
                .put("node.name", "groundwork-node-1")
                .put("path.home", home.toString())
                .put("path.data", data.toString())
                .put("path.logs", logs.toString())
                .put("discovery.type", "single-node")
                .put("network.host", "127.0.0.1")
                .put("http.port", args[1])
                .put("transport.port", args[2])
                // A laptop disk at 90% must not turn every index read-only.
                .put("cluster.routing.allocation.disk.threshold_enabled", false)
                .put("action.auto_create_index", false);
        for (int i = 4; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) {
                System.err.println("not a setting=value pair: " + args[i]);
                System.exit(2);
            }
            // a list setting (seed hosts, initial cluster managers) is read from
            // a comma-separated string, as with the distribution's -E flags
            builder.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        Settings settings = builder.build();
        Environment environment = InternalSettingsPreparer.prepareEnvironment(
                settings, Collections.emptyMap(), config, () -> "groundwork-node-1");

        List<Class<? extends Plugin>> plugins = List.of(
                Netty4Plugin.class,
                CommonAnalysisPlugin.class,
                ReindexPlugin.class,
                MapperExtrasPlugin.class,
                PainlessPlugin.class);
        Node node = new PluginNode(environment, plugins);

        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
            } catch (Exception e) {
                System.err.println("error closing node: " + e);
            } finally {
                closed.countDown();
            }
        }, "groundwork-opensearch-shutdown"));

        node.start();
        System.out.println("GROUNDWORK-OPENSEARCH-READY " + args[1]);
        System.out.flush();
        closed.await();
    }
}
