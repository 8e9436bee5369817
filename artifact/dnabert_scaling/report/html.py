"""HTML built by a template engine that escapes every value: the report's templates
(``resources/report/*.html.j2``) rendered by Jinja2 with ``autoescape=True``.

A value from a results folder (a GPU name, a label, a claim id, a reason) reaches the page only as
text: Jinja2 escapes whatever is not a :class:`markupsafe.Markup`, and only this module and the
templates make ``Markup``. Markup composed in Python goes through :func:`markup` (a format string
whose arguments are escaped), never through string concatenation."""

from __future__ import annotations

import functools
import re
from html.parser import HTMLParser
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup, escape

__all__ = ["LiveMarkup", "Markup", "assert_inert", "escape", "markup", "render"]


def _load(name: str) -> str:
    return resources.files("dnabert_scaling").joinpath(f"resources/report/{name}").read_text(encoding="utf-8")


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_load),
        autoescape=True,
        undefined=jinja2.StrictUndefined,  # a misspelt field is an error, not an empty cell
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env


def render(template: str, **context: Any) -> Markup:
    """``resources/report/<template>`` rendered with ``context``, every value escaped."""
    return Markup(environment().get_template(template).render(**context))


def markup(template: str, *args: Any, **kwargs: Any) -> Markup:
    """``template`` (trusted markup written in the code) with ``args`` / ``kwargs`` escaped into it."""
    return Markup(template).format(*args, **kwargs)


class LiveMarkup(ValueError):
    """HTML about to be shown holds something that would run: a script that is not the report's
    own, an event-handler attribute or a javascript: URL."""


class _Live(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[str] = []
        self.found: list[str] = []
        self._script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "iframe", "object", "embed"):
            self._script = tag == "script"
            self.scripts.append("")
            if tag != "script":
                self.found.append(f"<{tag}>")
        for name, value in attrs:
            if name.lower().startswith("on"):
                self.found.append(f"<{tag} {name}=...>")
            if value and re.sub(r"\s", "", value).lower().startswith(("javascript:", "vbscript:")):
                self.found.append(f"<{tag} {name}={value[:40]!r}>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = False

    def handle_data(self, data: str) -> None:
        if self._script:
            self.scripts[-1] += data


def assert_inert(html: str, own_scripts: tuple[re.Pattern, ...] = ()) -> None:
    """Raise :class:`LiveMarkup` unless every script in ``html`` is one of the report's own (matches
    one of ``own_scripts`` whole) and no element has an on* attribute or a javascript: URL. Every
    piece of HTML the report shows passes here: a value that escaped escaping stops the build."""
    p = _Live()
    p.feed(html)
    p.close()
    found = p.found + [f"<script>{text[:60]!r}" for text in p.scripts if not any(rx.fullmatch(text) for rx in own_scripts)]
    if found:
        raise LiveMarkup(f"the report would show live markup: {'; '.join(found[:5])}")
