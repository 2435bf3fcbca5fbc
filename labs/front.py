"""What the numbered lab scripts share: say which step of the manual this is, then run the CLI."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hivedlab.cli.main import main

# experiment id -> (manual step, zh summary, en summary)
STEPS: dict[str, tuple[str, str, str]] = {
    "vc-safety": (
        "4.2",
        "VC 安全：每位组员同时向 vc1 提交 job-config-0，观察任务在哪台机器上运行、default VC 空闲时等待的任务如何调度。",
        "VC safety: every member submits job-config-0 to vc1 at once; where do the jobs run, and do waiting jobs use "
        "the idle default VC?",
    ),
    "priority": (
        "4.3",
        "优先级和抢占：先提交 test 优先级的 job-config-1，运行时再提交 prod 优先级的 job-config-2。",
        "Priority and preemption: job-config-1 (test) runs, then job-config-2 (prod) is submitted to vc1.",
    ),
    "opportunistic": (
        "4.4",
        "低优先级任务：job-config-3 (prod) 运行时提交 job-config-4 (oppo)，再向 default VC 提交一个 test 任务。",
        "Opportunistic job: job-config-3 (prod) runs, job-config-4 (oppo) is submitted, then a test job to default.",
    ),
    "gang": (
        "4.6",
        "群调度：job-config-5 占用一台机器时提交 2 个子任务的 job-config-6（gang）。",
        "Gang scheduling: job-config-5 holds one node while the 2-task gang job job-config-6 is submitted.",
    ),
    "incremental": (
        "4.7",
        "弹性调度：job-config-5 运行时提交 gangAllocation: false 的 job-config-7；并尝试提交超过配额的任务。",
        "Incremental scheduling: job-config-5 runs while job-config-7 (gangAllocation: false) is submitted; then "
        "the over-quota question.",
    ),
}


def run_experiment_step(experiment: str, argv: Sequence[str]) -> int:
    """Print what the manual's step is about, then `hivedlab run EXPERIMENT [ARGS]` (simulated cluster by default)."""
    step, zh, en = STEPS[experiment]
    args = list(argv)
    on_cluster = "--cluster" in args and args[args.index("--cluster") + 1 : args.index("--cluster") + 2] == ["pai"]
    where = "真实集群 / real cluster" if on_cluster else "模拟集群 / simulated cluster (--cluster pai 在真实集群上运行)"
    print(f"[实验手册 {step} / manual step {step}] {zh}\n{en}\n运行于 / running on: {where}\n", flush=True)
    return main(["run", experiment, *args])


def run_command_step(step: str, zh: str, en: str, command: Sequence[str]) -> int:
    """Print what the manual's step is about, then run one hivedlab command."""
    print(f"[实验手册 {step} / manual step {step}] {zh}\n{en}\n", flush=True)
    return main(list(command))


if __name__ == "__main__":
    sys.exit(run_experiment_step(sys.argv[1], sys.argv[2:]))
