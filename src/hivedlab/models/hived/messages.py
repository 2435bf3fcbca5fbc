"""HiveD v0.3.4's own words: the wait reasons and errors a pod's FailedScheduling event carries.

The model builds its messages from here, and the checker's table of scheduler messages
(`hivedlab.models.scheduler_messages`) classifies them from here, so the two cannot disagree. Each text is HiveD's
as its source writes it (docs/hived-config-and-cells.md#wait-reasons).
"""

from __future__ import annotations

# pkg/scheduler/scheduler.go, filterRoutine: the fake FailedNodes entry of a pod that has to wait; the reason follows
# after ": " when the algorithm gave one.
WAIT_PREFIX = "Pod is waiting for preemptible or free resource to appear:"
WAIT_WITHOUT_REASON = WAIT_PREFIX[:-1]

# pkg/algorithm/topology_aware_scheduler.go, findNodesForPods: no node of the view has room.
INSUFFICIENT_CAPACITY = "insufficient capacity"

# pkg/scheduler/scheduler.go, generalScheduleAdmissionCheck: the extender was called for a pod HiveD's informer has
# not seen yet (or no longer has); kube-scheduler retries and the pod binds once the views agree. Not a wait.
POD_NOT_INFORMED = "Pod does not exist, completed or has not been informed to the scheduler"
ALREADY_BOUND = "Pod has already been bound to node"


def in_vc(reason: str, vc: str) -> str:
    """pkg/algorithm/intra_vc_scheduler.go, schedule: a guaranteed pod's reason within its VC."""
    return f"{reason} when scheduling in VC {vc}"


def in_physical_cluster(reason: str) -> str:
    """pkg/algorithm/hived_algorithm.go, scheduleOpportunisticAffinityGroup: an opportunistic pod's reason."""
    return f"{reason} when scheduling in physical cluster"


def bad_node(address: str) -> str:
    """pkg/algorithm/topology_aware_scheduler.go, findNodesForPods: the packing would need a bad node."""
    return f"have to use at least one bad node {address}"


def non_suggested_node(address: str) -> str:
    """The same, for a node K8s did not suggest (when suggested nodes are honoured)."""
    return f"have to use at least one non-suggested node {address}"


MAPPING_NEEDS = "Mapping the virtual placement would need to use at least one"


def mapping_needs_bad_node(suggested_honoured: bool, placement: str) -> str:
    """pkg/algorithm/hived_algorithm.go, scheduleGuaranteedAffinityGroup: no physical mapping of the virtual
    placement avoids bad (or non-suggested) nodes."""
    kind = "bad or non-suggested" if suggested_honoured else "bad"
    return f"{MAPPING_NEEDS} {kind} node (virtual placement : {placement})"


PREEMPTIBLE_PODS = "has preemptible Pods:"


def preemptible_pods(node: str, victims: str) -> str:
    """pkg/scheduler/scheduler.go, filterRoutine: a FailedNodes entry per victim node, telling K8s that preemption
    may help (the pod waits for its victims, then binds)."""
    return f"node({node}) {PREEMPTIBLE_PODS} {victims}"


def user_error(where: str, message: str) -> str:
    """pkg/webserver: a filter call that panicked with a user error, as kube-scheduler reports the extender's error."""
    return f"Code: 400, Message: hivedscheduler: User Error: {where}{message}"
