"""Running a driver on a node: publish slices, serve the sockets, clean up on the way out.

The order matters: slices go up before the kubelet can register the plugin (so the
scheduler can place claims the plugin will then be asked to prepare), the sockets go down
before the slices (so nothing is asked of a driver that is leaving), and the slices are
deleted last, as the kubelet would on deregistration. A periodic resync republishes
(free when nothing changed) so slices deleted or edited by someone else come back.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass

from drasched.node.driver import Driver
from drasched.node.plugin import KubeletPlugin
from drasched.node.publisher import PublishResult, SlicePublisher
from drasched.node.server import DEFAULT_PLUGINS_DIR, DEFAULT_REGISTRY_DIR, PluginServer
from drasched.store.base import ClusterStore

log = logging.getLogger(__name__)


@dataclass
class NodePaths:
    """Where the kubelet looks for plugins, and where this driver keeps its files."""

    registry_dir: str = DEFAULT_REGISTRY_DIR
    plugins_dir: str = DEFAULT_PLUGINS_DIR
    cdi_dir: str = "/var/run/cdi"

    def plugin_dir(self, driver_name: str) -> str:
        return os.path.join(self.plugins_dir, driver_name)


class DriverNode:
    """One driver on one node with everything wired: plugin, publisher, gRPC server."""

    def __init__(self, store: ClusterStore, driver: Driver, node_name: str, paths: NodePaths | None = None) -> None:
        self.paths = paths or NodePaths()
        plugin_dir = self.paths.plugin_dir(driver.name)
        self.plugin = KubeletPlugin(store, driver, node_name, cdi_dir=self.paths.cdi_dir, state_dir=plugin_dir)
        self.publisher = SlicePublisher(store, driver.name, node_name)
        self.server = PluginServer(self.plugin, registry_dir=self.paths.registry_dir, plugin_dir=plugin_dir)

    def publish(self) -> PublishResult:
        pools = self.plugin.pools()
        self.plugin.refresh_inventory(pools)
        result = self.publisher.publish(pools)
        if result.changed:
            log.info("slices: created %s updated %s deleted %s", result.created, result.updated, result.deleted)
        return result

    def start(self) -> None:
        self.publish()
        self.server.start()

    def stop(self) -> None:
        self.server.stop()
        gone = self.publisher.unpublish()
        log.info("removed slices %s", gone)

    def run(self, stop: threading.Event, resync_seconds: float = 60.0) -> None:
        """Serve until ``stop`` is set, resyncing slices every ``resync_seconds``."""
        self.start()
        try:
            while not stop.wait(resync_seconds):
                try:
                    self.publish()
                except Exception:  # the API server may be away for a while; keep serving
                    log.exception("republishing slices failed")
        finally:
            self.stop()
