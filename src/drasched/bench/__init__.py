"""``drasched bench``: fixed workloads, measured side by side with upstream kube-scheduler."""
