"""Timelines (`facts`, built by `builder`): what happened to each OpenPAI job, task and task attempt, built from
an evidence log.

Pure: `build_timeline(records)` folds evidence records (any iterable, so a 1 GB log streams) into frozen
dataclasses. Every fact carries a `Mark` — the record's seq (the evidence) and the record's time.

Times are the records' times (when the watcher received the change; virtual time on the simulator), so that
clock skew between nodes does not reorder events; the objects' own timestamps (kubelet's `startedAt`) are kept
beside them for display only.

The shapes the report's charts use:
- `Timeline.jobs` -> `JobTimeline` (one per OpenPAI job: plan key, user, job name, framework name = md5 of
  `user~job`, docs/openpai-model.md#framework-names), its `submissions` (the runner's records, a rejected one
  included) and
- `JobTimeline.attempts` -> `Attempt` (one per pod uid, i.e. per task attempt; a re-created pod has the same
  name and a new uid, docs/openpai-model.md#framework-names): `task_role`, `task_index`, `node`, `gpus`, `created`,
  `waits` (FailedScheduling with HiveD's reason, docs/hived-config-and-cells.md#wait-reasons), `bound`, `started`,
  `ended`, `outcome`;
- `Timeline.node_outages` -> `Outage` (`nodes`: a node not Ready, from a real cluster's Node records) and
  `Timeline.node_cordons` -> `Cordon` (a node cordoned, `spec.unschedulable`), each with the pods it `touched` and
  HiveD's `bad_marks` of the node.
"""

from hivedlab.checker.judging.pod_facts import (
    LeafCell,
    VcShare,
    hived_reason,
    vc_cells_from_config,
    vc_nodes_from_config,
)
from hivedlab.checker.judging.timeline.builder import TimelineBuilder, build_timeline, display_names
from hivedlab.checker.judging.timeline.facts import (
    OUTCOMES,
    Attempt,
    Cordon,
    JobTimeline,
    Mark,
    NodeSpan,
    Outage,
    Step,
    Submission,
    Timeline,
    Wait,
)
from hivedlab.checker.judging.timeline.nodes import bad_marks, began, on_node, touched
from hivedlab.models.kubeflow.manifests import WAIT_REASONS
from hivedlab.models.openpai.naming import TURN_MARK, framework_name

__all__ = [
    "OUTCOMES", "TURN_MARK", "WAIT_REASONS", "Attempt", "Cordon", "JobTimeline", "LeafCell", "Mark", "NodeSpan",
    "Outage", "Step", "Submission", "Timeline", "TimelineBuilder", "VcShare", "Wait", "bad_marks", "began",
    "build_timeline", "display_names", "framework_name", "hived_reason", "on_node", "touched", "vc_cells_from_config",
    "vc_nodes_from_config",
]
