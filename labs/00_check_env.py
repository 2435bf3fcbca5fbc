#!/usr/bin/env python3
"""Lab step 1: check this machine for the lab and write its environment record (`hivedlab env`, without installing).

Runs with the distribution's Python alone (Ubuntu 18.04: Python 3.6) and the standard library only: it imports the
check from the repository's `src/` folder, so keep this file and `hivedlab.envcheck` Python 3.6 code.

Usage: python3 labs/00_check_env.py [--member NAME] [--role worker|master|dev-box] [--gpu-container]
                                    [--format text|json] [--out PATH] [--lang zh|en]
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

from hivedlab.envcheck import main  # the import needs the line above

if __name__ == "__main__":
    sys.exit(main())
