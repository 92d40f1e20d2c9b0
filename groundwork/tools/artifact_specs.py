"""The artifact tools' contracts: create, update and export a deliverable.

Kept apart from the read and search tools in registry.py because their
provenance and edit bodies are the largest specs and change with the
artifact design, not with retrieval.
"""

from __future__ import annotations

from groundwork.render.renderers import known_formats
from groundwork.tools.spec import ToolSpec, array, integer, obj, string

EXPORT_FORMATS = known_formats()  # the renderers' registry: a new adapter is a new format
EDIT_OPS = ["insert_section", "replace_section", "delete_section", "update_table_cell", "append"]

PROVENANCE = obj(
    {
        "tool": string("what produced the content (your name or the generating tool)", 200),
        "run": string("an id of this run or conversation", 200),
        "inputs": string("the normalised inputs, as text (the request, parameters)", 20000),
        "derived_from": array(
            obj(
                {
                    "ref_type": string("what the reference names", enum=["chunk", "source"]),
                    "id": string("a chunk id or a source id", 100),
                    "version": string("the chunk's content_hash or the source's version_id", 100),
                },
                ["ref_type", "id", "version"],
            ),
            "the chunks or source versions the content was derived from (for staleness)",
            500,
        ),
    },
    ["tool", "run", "inputs", "derived_from"],
)

#: how far a save's own indexing got (groundwork.artifact_indexing)
INDEXING = obj(
    {
        "state": string(
            "indexed: searchable and citable now; pending: the ingest pipeline finishes it; "
            "failed: see reason (the artifact is saved either way)",
            enum=["indexed", "pending", "failed"],
        ),
        "reason": string("why it is not indexed (absent when indexed)"),
    },
    ["state"],
)

EDIT_BODY = obj(
    {
        "op": string("the kind of edit", enum=EDIT_OPS),
        "heading": string("the section's heading text (insert/replace/delete)", 300),
        "body": string("the section's new Markdown body (insert/replace)", 100000),
        "level": integer("heading level for insert_section (default 2)", 1, 6),
        "after": string("insert after this section's heading (default: at the end)", 300),
        "table": integer("0-based table index in document order (update_table_cell)"),
        "row": integer("0-based row; 0 is the header row (update_table_cell)"),
        "column": integer("0-based column (update_table_cell)"),
        "value": string("the new cell text (update_table_cell)", 2000),
        "text": string("Markdown to append (append)", 100000),
    },
    ["op"],
)

ARTIFACT_TOOLS: list[ToolSpec] = [
    ToolSpec(
        "create_artifact",
        "Save substantial output as a named, versioned Markdown artifact (searchable and "
        "citable like any file). Provenance is required.",
        obj(
            {
                "path": string("a file name ending in .md, e.g. reports/q3.md", 255),
                "markdown": string("the content", 200000),
                "provenance": PROVENANCE,
                "format": string(
                    "the deliverable's format (default markdown); the Markdown stays "
                    "its searchable, editable body",
                    enum=EXPORT_FORMATS,
                ),
            },
            ["path", "markdown", "provenance"],
        ),
        obj(
            {
                "artifact_id": string("the artifact"),
                "file_id": string("its document's file id"),
                "generation": integer("its version counter"),
                "indexing": INDEXING,
            },
            ["artifact_id", "file_id", "generation"],
        ),
        "write",
        "artifacts:write",
    ),
    ToolSpec(
        "update_artifact",
        "Apply structured edits to an artifact at a known generation (compare-and-set: if "
        "it moved on, reload and retry). Edits that delete or overwrite content are refused "
        "with what they would destroy and a proposal_token; show the user what would be "
        "destroyed; a user holding artifacts:approve approves it outside this tool, and you "
        "resubmit the same edits with the approval_token they give you.",
        obj(
            {
                "artifact_id": string("the artifact", 100),
                "expected_generation": integer("the generation you read", 1),
                "edits": array(EDIT_BODY, "edits, applied in order", 100),
                "approval_token": string(
                    "the approval a user holding artifacts:approve gave for this exact "
                    "proposal (never made by you)",
                    1000,
                ),
                "provenance": PROVENANCE,
            },
            ["artifact_id", "expected_generation", "edits", "provenance"],
        ),
        obj(
            {
                "artifact_id": string("the artifact"),
                "generation": integer("the new generation"),
                "summary": array(string("an applied edit"), "what changed", 100),
                "indexing": INDEXING,
            },
            ["artifact_id", "generation", "summary"],
        ),
        "destructive",
        "artifacts:write",
    ),
    ToolSpec(
        "export_artifact",
        "Render one version of an artifact to Markdown, HTML, PDF, DOCX, PPTX or XLSX (once per "
        "version and format; later calls return the same file).",
        obj(
            {
                "artifact_id": string("the artifact", 100),
                "generation": integer("the version to export", 1),
                "format": string("the format", enum=EXPORT_FORMATS),
            },
            ["artifact_id", "generation", "format"],
        ),
        obj(
            {
                "export_id": string("the export"),
                "state": string("rendered, failed or pending"),
                "artifact_file_id": string("the rendered file's id"),
                "unrenderable": array(string("U+XXXX"), "characters drawn as markers", 1000),
                "failure_reason": string("why it failed"),
            },
            ["export_id", "state"],
        ),
        "write",
        "artifacts:write",
    ),
]
