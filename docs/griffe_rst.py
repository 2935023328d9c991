"""A griffe extension for the API reference: ssdlab's docstrings are written for Sphinx-style
readers (``literals``, :class:`roles`, ``::`` literal blocks, ``>>>`` doctests), and this turns
the parts Markdown would misread into Markdown.

- a run of ``>>>`` lines (with their ``...`` continuations and expected output) becomes a
  ``pycon`` code block, so that ``r["a"]["b"]`` is not read as a reference link;
- a paragraph ending in ``::`` ends in ``:``, and the indented block after it becomes a code
  block;
- ``:class:`X```, ``:func:`X``` and the other roles become plain inline code ``X``.

Loaded by mkdocs.yml (``extensions: [docs/griffe_rst.py]``); nothing else uses it.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const):`~?([^`]+)`")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def markdown(text: str) -> str:
    """The docstring `text` with doctests, literal blocks and roles made Markdown."""
    text = ROLE.sub(r"`\1`", text)
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    fenced = False
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
        if fenced:
            out.append(line)
            i += 1
            continue
        if stripped.startswith(">>>"):
            pad = " " * _indent(line)
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][len(pad):] if lines[i].startswith(pad) else lines[i].strip())
                i += 1
            out += [pad + "```pycon", *(pad + b for b in block), pad + "```"]
            continue
        if stripped.endswith("::") and not stripped.startswith(".."):
            head = line.rstrip()[:-1]
            out.append(head if head.strip() != ":" else "")
            i += 1
            while i < len(lines) and not lines[i].strip():
                i += 1
            base = _indent(line)
            block = []
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > base):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            cut = min((_indent(b) for b in block if b.strip()), default=0)
            pad = " " * base
            out += ["", pad + "```", *(pad + b[cut:] if b.strip() else "" for b in block), pad + "```", ""]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


class SphinxToMarkdown(griffe.Extension):
    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:  # griffe's hook for every object
        doc = getattr(obj, "docstring", None)
        if doc is not None and doc.value:
            doc.value = markdown(doc.value)
