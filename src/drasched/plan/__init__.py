"""Planning tools over the embedded control plane: snapshot a cluster, ask what if, explain a pod."""
