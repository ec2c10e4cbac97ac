r"""MkDocs hook (mkdocs.yml `hooks:`): equations as MathML at build time.

pymdownx.arithmatex leaves `\( ... \)` and `\[ ... \]` in the page for a
JavaScript renderer. MathJax comes from a CDN, so offline (or behind a
firewall) readers saw raw TeX. With latex2mathml installed the TeX is
converted here to MathML, which browsers render natively (Chrome and
Edge 109+, Firefox, Safari) with no script and no network, and the
MathJax scripts are dropped from the page. Without latex2mathml the site
falls back to MathJax. A formula latex2mathml cannot convert is a build
warning (an error under `mkdocs build --strict`).
"""

import html
import logging
import re

try:
    from latex2mathml.converter import convert as _latex_to_mathml
except ImportError:  # fall back to MathJax in the browser
    _latex_to_mathml = None

_LOG = logging.getLogger("mkdocs.hooks.mathml")
_MATH = re.compile(r'<(span|div) class="arithmatex">(.*?)</\1>', re.S)
_DELIMITERS = {"span": (r"\(", r"\)"), "div": (r"\[", r"\]")}
# latex2mathml writes H' as <msup><mi>H</mi><mi>′</mi></msup>; the prime
# glyph is already raised, so as a superscript it shrinks to a speck above
# the letter (H' read as H). MathML Core wants the prime on the baseline.
_PRIME = re.compile(r"<msup>(<mi>[^<]*</mi>)<mi>(&#x0203[234];)</mi></msup>")
# ... and \infty as an operator, spaced like one: "- \infty" came out "-  ∞".
_INFINITY = "<mo>&#x0221E;</mo>"


def on_config(config):
    if _latex_to_mathml is not None:
        config.extra_javascript = [
            script for script in config.extra_javascript
            if "mathjax" not in str(getattr(script, "path", script)).lower()
        ]
    return config


def tex_to_mathml(match, page_name="?"):
    """One arithmatex element (a regex match) -> the same element, MathML."""
    tag, body = match.groups()
    tex = html.unescape(body).strip()
    start, end = _DELIMITERS[tag]
    if tex.startswith(start) and tex.endswith(end):
        tex = tex[len(start):-len(end)].strip()
    try:
        mathml = _latex_to_mathml(
            tex, display="block" if tag == "div" else "inline")
    except Exception as error:  # noqa: BLE001 - any converter failure
        _LOG.warning("%s: cannot convert %r to MathML: %s", page_name, tex,
                     error)
        return match.group(0)
    mathml = _PRIME.sub(r"\1<mo>\2</mo>", mathml)
    mathml = mathml.replace(_INFINITY, "<mi>&#x0221E;</mi>")
    return f'<{tag} class="arithmatex">{mathml}</{tag}>'


def on_page_content(text, page, config, files):
    if _latex_to_mathml is None or "arithmatex" not in text:
        return text
    return _MATH.sub(lambda m: tex_to_mathml(m, page.file.src_uri), text)
