"""Build-time extensions of the docs site (both loaded by mkdocs.yml).

1. A griffe extension that fences `>>>` examples as pycon code blocks.
2. A MkDocs hook that turns the TeX of equations into MathML (below).

Griffe extension: show `>>>` examples as Python console code blocks.

keras_bert docstrings put their runnable examples after an "Example:"
line without indenting them, so the Google parser reads them as plain
text, and Markdown would mangle them (`[...]` outputs look like links).
This fences each run of `>>>` / `...` lines and their output as `pycon`
before the docstring is parsed. Loaded by mkdocs.yml.
"""

import griffe


def fence_doctests(text):
    lines, out, index = text.split("\n"), [], 0
    while index < len(lines):
        line = lines[index]
        if not line.lstrip().startswith(">>>"):
            out.append(line)
            index += 1
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out.append(f"{indent}```pycon")
        # A block is the prompts and their output, up to a blank line.
        while index < len(lines) and lines[index].strip():
            out.append(lines[index])
            index += 1
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)

