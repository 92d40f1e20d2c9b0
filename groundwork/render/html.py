"""Blocks to a standalone HTML page (every text escaped: extracted text is data)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from groundwork.documents import Block, BlockKind


def render_html(title: str, blocks: Sequence[Block]) -> bytes:
    parts: list[str] = []
    in_list = False
    for block in blocks:
        if block.kind == BlockKind.LIST_ITEM:
            if not in_list:
                parts.append("<ul>")
                in_list = True
            parts.append(f"<li>{escape(block.text)}</li>")
            continue
        if in_list:
            parts.append("</ul>")
            in_list = False
        if block.kind == BlockKind.HEADING:
            level = min(max(block.level or 1, 1), 6)
            parts.append(f"<h{level}>{escape(block.text)}</h{level}>")
        elif block.kind == BlockKind.TABLE and block.table is not None:
            rows = []
            for n, row in enumerate(block.table.rows):
                cell = "th" if n < block.table.header_rows else "td"
                rows.append(
                    "<tr>" + "".join(f"<{cell}>{escape(c)}</{cell}>" for c in row) + "</tr>"
                )
            parts.append("<table>" + "".join(rows) + "</table>")
        elif block.kind == BlockKind.CODE:
            parts.append(f"<pre><code>{escape(block.text)}</code></pre>")
        else:
            parts.append(f"<p>{escape(block.text)}</p>")
    if in_list:
        parts.append("</ul>")
    style = (
        "body{font-family:system-ui,sans-serif;max-width:860px;margin:2em auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:3px 6px}"
    )
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{style}</style></head><body>{''.join(parts)}</body></html>"
    )
    return page.encode("utf-8")
