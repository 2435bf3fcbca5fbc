"""The Kubernetes annotations through which HiveD v0.3.4 talks to the pods it schedules (their names only)."""

PREFIX = "hivedscheduler.microsoft.com/"
SCHEDULING_ENABLE = PREFIX + "pod-scheduling-enable"  # "1" on pods HiveD schedules (OpenPAI sets it)
SCHEDULING_SPEC = PREFIX + "pod-scheduling-spec"  # the pod's request, YAML, written by OpenPAI
BIND_INFO = PREFIX + "pod-bind-info"  # where HiveD placed the pod (and its group), YAML, written by HiveD
LEAF_CELL_ISOLATION = PREFIX + "pod-leaf-cell-isolation"  # the leaf cell (GPU) indices on the node, e.g. "0,1"
LEAF_CELL_ISOLATION_OLD = PREFIX + "pod-gpu-isolation"  # the same, under its name before leaf cells were generic
