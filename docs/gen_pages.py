"""The site's generated pages (run by mkdocs-gen-files while `make docs` builds it): the architecture table and one
page per architecture (`architecture_pages.py`), the attention pictures, and the API reference, one page per shared
module of `hf_attn`, from its docstrings (mkdocstrings)."""

from __future__ import annotations

import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).resolve().parent))

from architecture_pages import PICTURES, ROOT, _registry, architecture_page, architecture_table

with mkdocs_gen_files.open("architectures/index.md", "w") as page:
    page.write("# The architectures\n\nEach row is a registry row (`hf-attn list` prints the same table).\n\n")
    page.write(architecture_table(page_links=True).replace("](architectures/", "]("))
for name in _registry():
    with mkdocs_gen_files.open(f"architectures/{name}.md", "w") as page:
        page.write(architecture_page(name))
for picture in sorted(PICTURES.glob("*.png")):
    with mkdocs_gen_files.open(f"attention/{picture.name}", "wb") as file:
        file.write(picture.read_bytes())

package = ROOT / "hf_attn"
reference = []
for path in sorted(package.rglob("*.py")):
    relative = path.relative_to(package).with_suffix("")
    if relative.parts[0] == "models" or (relative.name.startswith("_") and relative.name != "__init__"):
        continue
    parts = ["hf_attn", *relative.parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    module = ".".join(parts)
    with mkdocs_gen_files.open(f"reference/{module}.md", "w") as page:
        page.write(f"# `{module}`\n\n::: {module}\n")
    reference.append(f"* [`{module}`]({module}.md)")
with mkdocs_gen_files.open("reference/index.md", "w") as page:
    page.write("# API reference\n\nEvery shared module of `hf_attn`, from its docstrings.\n\n")
    page.write("\n".join(reference) + "\n")
