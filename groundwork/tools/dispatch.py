"""Calling a tool: check the key's scope, validate the arguments against the
tool's schema, run its handler behind the caller's tenant wall, check the
result against its output schema. It sits below both transports (MCP and
HTTP /v1/tools), which call it and never each other, so they cannot drift."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from groundwork.catalog import Authenticated
from groundwork.errors import CapabilityUnavailable, InvalidRequest, NotFound, Refused
from groundwork.ports import Principal
from groundwork.services.hygiene import check_value
from groundwork.services.limits import RateLimiter
from groundwork.services.platform import WalledPlatform
from groundwork.services.scopes import require_scope
from groundwork.services.turns import TurnLedger
from groundwork.tools.handlers import HANDLERS, Handler, get_chunks
from groundwork.tools.registry import DEFAULT_DRILLDOWN_CAP, TOOLS
from groundwork.tools.spec import ToolRefusal, ToolSpec


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
        self, platform_factory: Callable[[], WalledPlatform], drilldown_cap: int | None = None
    ) -> None:
        self._platform_factory = platform_factory
        #: one per process's dispatcher; HTTP /v1/chunks counts against it too
        self.turns = TurnLedger(drilldown_cap or drilldown_cap_from_env())
        #: the rate buckets of a transport that calls tools without the HTTP
        #: route-scope check (MCP): one per process, like the API's
        self.limiter = RateLimiter()
        self._handlers: dict[str, Handler] = {**HANDLERS, "get_chunks": get_chunks(self.turns)}
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

    def authenticate(self, api_key: str) -> Authenticated | None:
        """The key's principal with its tenant (and the tenant's limits), read per call."""
        return self._platform_factory().catalog.authenticate(api_key)

    def call_admitted(
        self, found: Authenticated, name: str, arguments: dict[str, Any] | None
    ) -> ToolResult:
        """`call` for a transport whose request was not admitted yet (MCP): the
        tenant's and the key's rate first, refused as HTTP refuses it (rate_limited)."""
        try:
            self.limiter.admit(found.principal, found.tenant.limits)
        except Refused as exc:
            return self._refused(
                ToolRefusal(exc.code, exc.message, exc.alternative, dict(exc.details))
            )
        return self.call(found.principal, name, arguments)

    def call(self, who: Principal, name: str, arguments: dict[str, Any] | None) -> ToolResult:
        """A call already admitted by its transport (HTTP: the route-scope check)."""
        if name not in TOOLS:
            return self._refused(
                ToolRefusal(
                    "not_found", f"there is no tool {name!r}", f"tools: {', '.join(sorted(TOOLS))}"
                )
            )
        spec = TOOLS[name]
        try:
            require_scope(who, spec.scope, name)
        except Refused as exc:
            return self._refused(ToolRefusal(exc.code, exc.message, exc.alternative))
        args = arguments or {}
        try:
            check_value(args, "")
        except Refused as exc:
            return self._refused(ToolRefusal(exc.code, exc.message, exc.alternative))
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
        except Refused as exc:  # an application-layer refusal, as every transport renders it
            result = ToolRefusal(exc.code, exc.message, exc.alternative, dict(exc.details) or None)
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
