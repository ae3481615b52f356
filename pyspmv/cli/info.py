"""``pyspmv info``: what this installation is and uses (:mod:`pyspmv.cli.about`)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse

from .about import about, text
from .common import print_json


def run(args: argparse.Namespace) -> int:
    a = about()
    if args.json:
        print_json(a)
    else:
        print(text(a))
    return 0
