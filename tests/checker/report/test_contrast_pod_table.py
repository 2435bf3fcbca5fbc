"""The contrast section's `kubectl get pod`-style tables (src/hivedlab/checker/report/contrast.py): every column is as
wide as its widest cell plus kubectl's padding, so long node names never run into the next column."""

from __future__ import annotations

from hivedlab.checker.report.contrast import PodRow, pod_table


def test_a_long_node_name_keeps_its_distance_from_age() -> None:
    rows = [PodRow("job-a-worker-0", "Running", "hostname-carol", 100.0),
            PodRow("job-a-worker-1", "Pending", "<none>", 110.0)]
    lines = pod_table(rows, 126.0).splitlines()
    assert lines[1].split() == ["job-a-worker-0", "1/1", "Running", "hostname-carol", "26s"]
    assert "hostname-carol   26s" in lines[1]
    starts = {line.index(word) for line, word in zip(lines, ("AGE", "26s", "16s"), strict=True)}
    assert len(starts) == 1  # AGE, 26s and 16s begin in one column


def test_no_pods_reads_as_kubectl_says_it() -> None:
    assert pod_table([], 0.0) == "No resources found."
