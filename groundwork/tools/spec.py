"""How a tool is described: once, here, for every transport.

Input schemas are written for strict constrained decoders: plain enums, every
property a single type, optional properties left out of `required` (never a
union with null), no free-form objects. Tenant and subjects are never
arguments: the principal comes from the transport's authentication.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Risk = Literal["read", "write", "destructive"]
JsonSchema = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str  # written for a model: what it does, when to use it, what it returns
    input_schema: JsonSchema
    output_schema: JsonSchema
    risk: Risk
    scope: str  # the permission a key needs: files:read, files:write, artifacts:write


@dataclass(frozen=True, slots=True)
class ToolRefusal:
    """An outcome that is not a result. Always names the next step, because a
    refusal with no next step produces retry loops."""

    error: str  # not_found | invalid | approval_required | stale_generation | limit | unavailable
    message: str
    alternative: str
    details: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "error": self.error,
            "message": self.message,
            "alternative": self.alternative,
        }
        if self.details:
            data["details"] = self.details
        return data


def obj(properties: dict[str, JsonSchema], required: list[str] | None = None) -> JsonSchema:
    return {
        "type": "object",
        "properties": properties,
        "required": required or [],
        "additionalProperties": False,
    }


def string(
    description: str, max_length: int | None = None, enum: list[str] | None = None
) -> JsonSchema:
    """Input strings always pass a bound (or an enum); output strings need none."""
    schema: JsonSchema = {"type": "string", "description": description}
    if enum is not None:
        schema["enum"] = enum
    elif max_length is not None:
        schema["maxLength"] = max_length
    return schema


def integer(description: str, minimum: int = 0, maximum: int | None = None) -> JsonSchema:
    schema: JsonSchema = {"type": "integer", "description": description, "minimum": minimum}
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def boolean(description: str) -> JsonSchema:
    return {"type": "boolean", "description": description}


def array(items: JsonSchema, description: str, max_items: int = 100) -> JsonSchema:
    return {"type": "array", "items": items, "description": description, "maxItems": max_items}


def loose(description: str) -> JsonSchema:
    """Output-only: a value whose shape depends on the data (never in an input schema)."""
    return {"description": description}
