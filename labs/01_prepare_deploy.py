#!/usr/bin/env python3
"""Lab step 2.1: write OpenPAI's quick-start inputs (master.csv, worker.csv, config.yaml) from the group inventory.

Usage: python3 labs/01_prepare_deploy.py [--inventory FILE] [--env out/env] [--out ~/pai-inputs] [--password-file FILE]
(default inventory: the repository's group.yaml; the SSH password is asked without echo, or HIVEDLAB_SSH_PASSWORD)
"""

import sys

from find_venv import use_repository_venv

if __name__ == "__main__":
    use_repository_venv()
    from hivedlab.lab_scripts import run_command_step

    sys.exit(run_command_step(
        "2.1",
        "准备部署配置文件：从小组清单生成 master.csv、worker.csv 和 config.yaml，检查后打印部署命令。",
        "Prepare the deployment inputs: master.csv, worker.csv and config.yaml from the group inventory, checked, "
        "then the deployment commands.",
        ["deploy-inputs", *sys.argv[1:]],
    ))
