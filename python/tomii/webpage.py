"""Self-contained HTML pages: a template of the package's `_web/` folder, with its styles, the
library scripts it names (read from the installed XStatic packages) and its own scripts inlined,
and a JSON payload that the scripts read. The graph view (`graph_view`) is one such page.

A page loads nothing from anywhere: every script and style is in it, and its Content Security
Policy forbids loading any other (a page served by the package may call back to where it came
from, nothing else). It never names a network resource; it never reads a library copied into
the repository.
"""

from __future__ import annotations

import importlib
import json
import os
import tempfile
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["LIBRARIES", "assemble", "library_script", "temporary_page"]

#: The JavaScript libraries a page may use: name → (XStatic package, file in its BASE_DIR).
LIBRARIES = {
    "d3": ("xstatic.pkg.d3", "d3.js"),
    # The full bundle: dagre with the graphlib and lodash it needs.
    "dagre": ("xstatic.pkg.dagre", "dagre.min.js"),
}

#: How long a page opened in a browser is kept in the temporary directory: the browser reads it
#: after the process that wrote it may have ended, so it is removed by a later page, not at exit.
TEMPORARY_PAGES_KEPT_S = 24 * 3600

#: What a template marks for `assemble` to fill, each on a line of its own.
_TITLE, _STYLES, _SCRIPTS = "{{title}}", "{{styles}}", "{{scripts}}"


def assemble(
    template: str,
    *,
    title: str,
    payload: Any,
    libraries: Sequence[str] = (),
    styles: Sequence[str] = (),
    scripts: Sequence[str] = (),
) -> str:
    """The page of `_web/<template>`: `styles` (files of `_web/`) inlined at `{{styles}}`; at
    `{{scripts}}`, the payload as JSON in `<script id="tomii-payload">`, then the `libraries`
    (names in LIBRARIES) and the `scripts` (files of `_web/`), in that order. A script reads the
    payload with `JSON.parse(document.getElementById("tomii-payload").textContent)`."""
    page = _web_file(template)
    for marker in (_TITLE, _STYLES, _SCRIPTS):
        if page.count(marker) != 1:
            raise ValueError(f"the page template {template} must hold {marker} once")
    style = "\n".join(f"<style>\n{_web_file(name)}</style>" for name in styles)
    code = [f'<script type="application/json" id="tomii-payload">{_json(payload)}</script>']
    code += [_script(library_script(name)) for name in libraries]
    code += [_script(_web_file(name)) for name in scripts]
    page = page.replace(_TITLE, _html_text(title)).replace(_STYLES, style)
    # The scripts go in last, so that no marker inside them is ever taken for the template's.
    return page.replace(_SCRIPTS, "\n".join(code))


def temporary_page(prefix: str, page: str) -> Path:
    """Writes `page` to a new file `<prefix>XXXX.html` of the temporary directory, for a browser
    to read, and removes this user's earlier pages of that prefix there that are older than
    TEMPORARY_PAGES_KEPT_S (a page still open in a browser stays on screen)."""
    folder = Path(tempfile.gettempdir())
    now = time.time()
    for old in folder.glob(f"{prefix}*.html"):
        try:
            info = old.lstat()
            if info.st_uid == os.getuid() and now - info.st_mtime > TEMPORARY_PAGES_KEPT_S:
                old.unlink()
        except OSError:
            continue  # gone meanwhile, or not ours to remove
    handle, name = tempfile.mkstemp(prefix=prefix, suffix=".html")
    with open(handle, "w", encoding="utf-8") as file:
        file.write(page)
    return Path(name)


def library_script(name: str) -> str:
    """The text of library `name` (a key of LIBRARIES), from its installed XStatic package."""
    if name not in LIBRARIES:
        raise ValueError(f"no page library {name!r}; the libraries are {', '.join(LIBRARIES)}")
    package, file = LIBRARIES[name]
    try:
        module = importlib.import_module(package)
    except ImportError:
        distribution = "XStatic-" + package.rsplit(".", 1)[1].capitalize()
        raise RuntimeError(
            f"the page library {name} needs the package {distribution} (a dependency of tomii): "
            f"pip install {distribution}"
        ) from None
    return Path(module.BASE_DIR, file).read_text(encoding="utf-8")


def _web_file(name: str) -> str:
    return resources.files("tomii").joinpath("_web", name).read_text(encoding="utf-8")


def _script(code: str) -> str:
    # `</script` would end the element early; `<\/script` means the same inside JavaScript's
    # strings and regular expressions, the only places it can occur.
    return "<script>\n" + code.replace("</script", "<\\/script") + "\n</script>"


def _json(payload: Any) -> str:
    """`payload` as JSON that cannot end its script element or be read as HTML."""
    text = json.dumps(payload, ensure_ascii=True, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _html_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
