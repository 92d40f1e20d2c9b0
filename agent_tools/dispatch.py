"""Calling a tool: validate the arguments against its schema, run its handler
behind the caller's tenant wall, check the result against its output schema.
Both transports (MCP and HTTP) go through here, so they cannot drift."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from agent_tools.handlers import HANDLERS, Handler, TurnLedger, get_chunks
from groundwork.errors import CapabilityUnavailable, InvalidRequest, NotFound
from groundwork.ports import Principal
from groundwork.tools.registry import DEFAULT_DRILLDOWN_CAP, TOOLS
from groundwork.tools.spec import ToolRefusal, ToolSpec
from resources.platform import Platform


class ToolOutputMismatch(Exception):
    """A handler returned something its output schema does not allow (a bug)."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    ok: bool
    payload: dict[str, Any]  # the result, or the refusal (error, message, alternative)


def drilldown_cap_from_env() -> int:
    return int(os.environ.get("GROUNDWORK_DRILLDOWN_CAP", str(DEFAULT_DRILLDOWN_CAP)))


class ToolDispatcher:
    def __init__(
        self, platform_factory: Callable[[], Platform], drilldown_cap: int | None = None
    ) -> None:
        self._platform_factory = platform_factory
        self._handlers: dict[str, Handler] = {
            **HANDLERS,
            "get_chunks": get_chunks(TurnLedger(drilldown_cap or drilldown_cap_from_env())),
        }
        missing = set(TOOLS) - set(self._handlers)
        if missing:
            raise RuntimeError(f"tools without a handler: {sorted(missing)}")
        self._inputs = {
            name: Draft202012Validator(spec.input_schema) for name, spec in TOOLS.items()
        }
        self._outputs = {
            name: Draft202012Validator(spec.output_schema) for name, spec in TOOLS.items()
        }

    @property
    def specs(self) -> list[ToolSpec]:
        return list(TOOLS.values())

    def principal(self, api_key: str) -> Principal | None:
        return self._platform_factory().catalog.principal_for_key(api_key)

    def call(self, who: Principal, name: str, arguments: dict[str, Any] | None) -> ToolResult:
        if name not in TOOLS:
            return self._refused(
                ToolRefusal(
                    "not_found", f"there is no tool {name!r}", f"tools: {', '.join(sorted(TOOLS))}"
                )
            )
        spec = TOOLS[name]
        if spec.scope not in who.scopes:
            return self._refused(
                ToolRefusal(
                    "forbidden",
                    f"{name} needs the scope {spec.scope}; this key has {', '.join(who.scopes) or 'none'}",
                    "use a read tool, or ask an administrator for a key with that scope "
                    f"(groundwork key create ... --scope {spec.scope})",
                )
            )
        args = arguments or {}
        errors = sorted(self._inputs[name].iter_errors(args), key=lambda e: list(e.path))
        if errors:
            where = "/".join(str(p) for p in errors[0].path) or "arguments"
            return self._refused(
                ToolRefusal(
                    "invalid",
                    f"{where}: {errors[0].message}",
                    f"send arguments matching the {name} input schema (see the tool list)",
                )
            )
        platform = self._platform_factory().for_tenant(who.tenant_id)
        try:
            result = self._handlers[name](platform, who, args)
        except NotFound as exc:
            result = ToolRefusal(
                "not_found", str(exc), "call list_files or search_files for ids you can use"
            )
        except InvalidRequest as exc:
            result = ToolRefusal("invalid", str(exc), "fix the arguments and call again")
        except CapabilityUnavailable as exc:
            result = ToolRefusal(
                "unavailable", str(exc), "use a tool that does not need this capability"
            )
        if isinstance(result, ToolRefusal):
            return self._refused(result)
        problems = list(self._outputs[name].iter_errors(result))
        if problems:
            raise ToolOutputMismatch(
                f"{name} output breaks its schema at {list(problems[0].path)}: "
                f"{problems[0].message[:300]}"
            )
        return ToolResult(True, result)

    @staticmethod
    def _refused(refusal: ToolRefusal) -> ToolResult:
        return ToolResult(False, refusal.to_dict())
