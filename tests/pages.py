"""Test helper: the fenced code blocks of the documentation pages (README.md, docs/guide/*.md), read as
written, for the tests that run them (test_readme.py) and type-check them (test_typing.py)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The first line of a python block, or the comment of a command, that runs only where a GPU is usable.
GPU = "needs a GPU"


def blocks(page: Path, lang: str) -> list[tuple[int, str]]:
    """(line number of the block's first line, text) of every ```lang block of ``page``."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1))
            for m in re.finditer(rf"^```{lang}\n(.*?)^```", text, re.MULTILINE | re.DOTALL)]


def is_gpu(block: str) -> bool:
    """Whether a python block is one that needs a GPU (its first line says so)."""
    return block.lstrip().startswith(f"# {GPU}")
