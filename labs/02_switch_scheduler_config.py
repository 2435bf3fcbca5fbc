#!/usr/bin/env python3
"""Lab steps 4.1 / 4.5: put the two-VC or the one-VC HiveD config into services-configuration.yaml.

Usage: python3 labs/02_switch_scheduler_config.py two-vc|one-vc [--inventory FILE]
           [--services-config ~/pai-deploy/cluster-cfg] [--out DIR | --in-place] [--wait SECONDS]
"""

import sys

from find_venv import use_repository_venv

if __name__ == "__main__":
    use_repository_venv()
    from hivedlab.lab_scripts import run_command_step

    step = "4.5" if sys.argv[1:2] == ["one-vc"] else "4.1"
    sys.exit(run_command_step(
        step,
        "更改调度器配置：为本组的 worker 生成 HiveD 配置（two-vc：两个 VC；one-vc：一个 VC），"
        "写入 services-configuration.yaml，然后用 paictl 推送并重启服务。",
        "Change the scheduler config: the group's HiveD config (two-vc: two VCs; one-vc: one VC) into "
        "services-configuration.yaml, then push it with paictl and restart the services.",
        ["scheduler-config", *sys.argv[1:]],
    ))
