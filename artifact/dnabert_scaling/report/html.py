"""HTML built by a template engine that escapes every value: the report's templates
(``resources/report/*.html.j2``) rendered by Jinja2 with ``autoescape=True``.

A value from a results folder (a GPU name, a label, a claim id, a reason) reaches the page only as
text: Jinja2 escapes whatever is not a :class:`markupsafe.Markup`, and only this module and the
templates make ``Markup``. Markup composed in Python goes through :func:`markup` (a format string
whose arguments are escaped), never through string concatenation."""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup, escape

__all__ = ["Markup", "escape", "markup", "render"]


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
