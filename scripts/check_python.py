#!/usr/bin/env python3
"""`make venv` runs this first: hivedlab needs Python 3.10 or newer; say so, and how to get one, before pip fails.

Python 3.6 code and the standard library only: it runs on the lab machines' system Python (Ubuntu 18.04: 3.6).
"""

import sys

NEEDED = (3, 10)

MESSAGE = """\
hivedlab 需要 Python {need} 或更新版本；{exe} 是 Python {have}。
hivedlab needs Python {need} or newer; {exe} is Python {have}.
获取 / how to get one:
  - Ubuntu 20.04: sudo add-apt-repository ppa:deadsnakes/ppa && sudo apt install python3.10 python3.10-venv
  - 任何 Ubuntu（包括 18.04）/ any Ubuntu (18.04 too): pyenv (`pyenv install 3.10`) 或 / or Miniconda
  然后用它运行 / then run with it: make run PYTHON=python3.10  （或它的完整路径 / or its full path）
  - 也可以在能访问集群的电脑上运行 hivedlab / or run hivedlab on a laptop that reaches the cluster:
    --cluster pai 只需要 OpenPAI 的地址、token 和 kubeconfig / needs only OpenPAI's address, a token and the kubeconfig
"""


def main():
    # type: () -> int
    if sys.version_info[:2] >= NEEDED:
        return 0
    sys.stderr.write(MESSAGE.format(need="{}.{}".format(*NEEDED), exe=sys.executable,
                                    have="{}.{}.{}".format(*sys.version_info[:3])))
    return 2


if __name__ == "__main__":
    sys.exit(main())
