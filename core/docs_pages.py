"""Docs served by the service itself, so links in its answers open: /docs/readiness renders docs/readiness.md,
which every readiness mistake links to (`docs`: /docs/readiness#<code>)."""

import re
from functools import cache
from typing import Any

from django.conf import settings
from django.utils.safestring import mark_safe
from django.views.generic import TemplateView
from markdown_it import MarkdownIt

READINESS_DOCS = settings.BASE_DIR / "docs" / "readiness.md"


def heading_anchor(text: str) -> str:
    """GitHub's anchor of a heading (lower case, punctuation but - and _ dropped, spaces as -): the served page and
    the repository's rendering of the file answer the same links."""
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text.strip().lower()))


@cache
def markdown_page(path: Any) -> str:
    """The Markdown file as HTML (a trusted file of the repository, so its own HTML is kept), each heading with
    its anchor as id. Read once per process."""
    renderer = MarkdownIt("commonmark", {"html": True}).enable("table")
    tokens = renderer.parse(path.read_text(encoding="utf-8"))
    for opening, inline in zip(tokens, tokens[1:], strict=False):
        if opening.type == "heading_open" and inline.type == "inline":
            opening.attrSet("id", heading_anchor(inline.content))
    html: str = renderer.renderer.render(tokens, renderer.options, {})
    return html


class ReadinessDocsView(TemplateView):
    template_name = "docs/readiness.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), "body": mark_safe(markdown_page(READINESS_DOCS))}  # noqa: S308
