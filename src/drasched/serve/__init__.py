"""``drasched serve``: the controllers against a real kube-apiserver, with leader election,
health and Prometheus metrics."""
