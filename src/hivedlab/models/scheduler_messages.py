"""The one table of scheduler messages: what a FailedScheduling (or kube-batch `Unschedulable`) message says about
why a pod is not running, in classes the checker's rules and the real backend use (docs/checker.md#scheduler-messages).

The texts are the schedulers' own, kept beside their models (`hivedlab.models.hived.messages` for HiveD v0.3.4; the
default scheduler's and kube-batch v0.4's in `hivedlab.models.schedulers`); this module only sorts them. A message
hivedlab does not know is `UNKNOWN`, and an answer then says so instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass

from hivedlab.basics.text import Text
from hivedlab.models.hived import messages as hived
from hivedlab.models.schedulers import kube_batch
from hivedlab.models.schedulers.resources import GPU

CAPACITY = "capacity"  # no room for the pod on the nodes it may use (physical cluster, or the nodes themselves)
VC_QUOTA = "vc-quota"  # HiveD: the pod's VC has no free cell of the kind it asks for
BAD_NODES = "bad-nodes"  # HiveD: the only room is on bad (or non-suggested) nodes
PREEMPTION = "preemption"  # HiveD asked K8s to preempt lower-priority pods; the pod waits for its victims
GANG = "gang"  # kube-batch: the gang (PodGroup) is not complete or does not fit as a whole
TRANSIENT = "transient"  # HiveD's and kube-scheduler's views briefly out of step; retried, never a wait
REFUSED = "refused"  # the scheduler refuses the pod itself (HiveD's user error): it will never be placed
UNKNOWN = "unknown"

CLASSES = (CAPACITY, VC_QUOTA, BAD_NODES, PREEMPTION, GANG, TRANSIENT, REFUSED, UNKNOWN)

# kube-scheduler's FailedScheduling event for a pod already being deleted (`scheduleOne`, pkg/scheduler/scheduler.go:
# "skip schedule deleting pod: <namespace>/<name>"), seen when a job is stopped while its pod waits: the pod is going
# away, so it is never a reason to wait
DELETING_POD = "skip schedule deleting pod"

# (class, a text of the scheduler's that identifies it), most specific first: an aggregated default-scheduler
# message holds HiveD's entry beside other nodes' reasons, and HiveD's entry decides.
_TABLE: tuple[tuple[str, str], ...] = (
    (TRANSIENT, hived.POD_NOT_INFORMED),
    (TRANSIENT, hived.ALREADY_BOUND),
    (TRANSIENT, DELETING_POD),
    (REFUSED, hived.user_error("", "")),
    (BAD_NODES, hived.bad_node("")),
    (BAD_NODES, hived.non_suggested_node("")),
    (BAD_NODES, hived.MAPPING_NEEDS),
    (VC_QUOTA, hived.in_vc(hived.INSUFFICIENT_CAPACITY, "")),
    (CAPACITY, hived.in_physical_cluster(hived.INSUFFICIENT_CAPACITY)),
    (CAPACITY, hived.WAIT_WITHOUT_REASON),
    (PREEMPTION, hived.PREEMPTIBLE_PODS),
    (GANG, kube_batch.NOT_ENOUGH_VALID_TASKS),
    (GANG, kube_batch.GANG_UNSCHEDULABLE),
    (CAPACITY, f"Insufficient {GPU}"),  # the default scheduler's resource fit (models/schedulers/default.py)
    (CAPACITY, "Insufficient cpu"),
    (CAPACITY, "Insufficient memory"),
    (CAPACITY, "insufficient GPU"),  # kube-batch v0.4's job FitError (models/schedulers/kube_batch.py)
    (CAPACITY, "insufficient cpu"),
    (CAPACITY, "insufficient memory"),
    (CAPACITY, "0 nodes are available"),
)


def classify(message: str) -> str:
    """The class of one scheduler message (one of `CLASSES`)."""
    for kind, text in _TABLE:
        if text and text in message:
            return kind
    return UNKNOWN


@dataclass(frozen=True)
class Unknown:
    """Messages the table does not know, for an answer to name."""

    messages: tuple[str, ...]

    def text(self) -> Text:
        quoted = "；".join(f"“{m}”" for m in self.messages)
        quoted_en = "; ".join(f"'{m}'" for m in self.messages)
        return Text(f"调度器给出了 hivedlab 不认识的消息：{quoted}，无法据此判断等待原因",
                    f"the scheduler gave a message hivedlab does not know: {quoted_en}; it cannot tell why from it")
