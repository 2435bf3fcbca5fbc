#!/usr/bin/env python3
"""Lab step: the 'priority' experiment. Runs on the simulated cluster; add `--cluster pai` on a real one.

Usage: python3 labs/04_priority.py [--cluster sim|pai] [--out DIR] [--seed N] [--inventory FILE] [--member NAME]
"""

import sys

from find_venv import use_repository_venv

if __name__ == "__main__":
    use_repository_venv()
    from hivedlab.lab_scripts import run_experiment_step

    sys.exit(run_experiment_step("priority", sys.argv[1:]))
