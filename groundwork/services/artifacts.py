"""Revising artifacts and approving destructive edits: one path for HTTP and
the tools.

A revise call that would destroy content is refused with `approval-required`,
what it would destroy, and a signed `proposal_token`. Approval is a separate
call (`approve`) by a principal holding artifacts:approve (checked by the
transports from the scope table), which exchanges the proposal for an
`approval_token`; resubmitting the same edits with it applies them. The
proposer's own key without the approve scope cannot approve.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from groundwork import approvals
from groundwork.artifact_edits import Edit, EditsRefused
from groundwork.artifacts import Provenance, Saved, StaleGenerationError, revise_artifact
from groundwork.errors import Refused
from groundwork.ports import Principal
from groundwork.services.platform import PlatformPorts

Clock = Callable[[], datetime]


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Approved:
    approval_token: str
    artifact_id: str
    generation: int
    proposer: str
    expires_at: datetime


def _token_refused(refused: approvals.TokenRefused, what: str) -> Refused:
    return Refused(
        f"the {what} is {refused.reason}",
        "propose the edits again to get a fresh proposal_token, and have it approved",
        code="invalid",
    )


def revise(
    ports: PlatformPorts,
    who: Principal,
    artifact_id: str,
    *,
    expected_generation: int,
    provenance: Provenance,
    markdown: str | None = None,
    edits: Sequence[Edit] = (),
    approval_token: str | None = None,
    now: Clock = _now,
) -> Saved:
    """Refusals: `stale_generation` (with the current generation),
    `approval-required` (with destroys and proposal_token), `invalid`."""
    approved_digest: str | None = None
    if approval_token:
        grant = approvals.read(
            ports.approval_secret(), approval_token, "approval", who.tenant_id, now()
        )
        if isinstance(grant, approvals.TokenRefused):
            raise _token_refused(grant, "approval_token")
        if grant.artifact_id != artifact_id or grant.generation != expected_generation:
            raise _token_refused(approvals.TokenRefused("mismatch"), "approval_token")
        approved_digest = grant.digest
    try:
        outcome = revise_artifact(
            ports.catalog,
            ports.blobs,
            ports.artifacts,
            who.scope,
            artifact_id,
            expected_generation=expected_generation,
            provenance=provenance,
            markdown=markdown,
            edits=edits,
            approved_digest=approved_digest,
        )
    except StaleGenerationError as exc:
        raise Refused(
            str(exc),
            f"reload the artifact (generation {exc.current}) and apply the change again",
            {"current_generation": exc.current},
            "stale_generation",
        ) from exc
    if isinstance(outcome, EditsRefused):
        if outcome.reason != "approval-required" or outcome.digest is None:
            raise Refused(outcome.message, "fix the edit and resubmit", code="invalid")
        proposal = approvals.propose(
            ports.approval_secret(),
            who.tenant_id,
            artifact_id,
            expected_generation,
            outcome.digest,
            who.key_id,
            now(),
        )
        raise Refused(
            outcome.message,
            "have a user holding artifacts:approve approve proposal_token "
            f"(POST /v1/artifacts/{artifact_id}/approve), then resubmit the same edits with "
            "the approval_token it returns; or use insert_section/append, which destroy nothing",
            {"destroys": list(outcome.destroys), "proposal_token": proposal},
            "approval_required",
        )
    return outcome


def approve(
    ports: PlatformPorts, who: Principal, artifact_id: str, proposal_token: str, now: Clock = _now
) -> Approved:
    """Exchange a proposal for an approval (the caller holds artifacts:approve:
    the transports check it from the scope table before calling)."""
    grant = approvals.read(
        ports.approval_secret(), proposal_token, "proposal", who.tenant_id, now()
    )
    if isinstance(grant, approvals.TokenRefused):
        raise _token_refused(grant, "proposal_token")
    if grant.artifact_id != artifact_id:
        raise _token_refused(approvals.TokenRefused("mismatch"), "proposal_token")
    if ports.artifacts.get(who.scope, artifact_id) is None:
        raise Refused(
            f"no artifact {artifact_id} is visible to you",
            "check the artifact id",
            code="not_found",
        )
    approval = approvals.Grant(
        "approval",
        grant.tenant_id,
        grant.artifact_id,
        grant.generation,
        grant.digest,
        grant.proposer,
        who.key_id,
        now() + approvals.LIFETIME,
    )
    return Approved(
        approvals.issue(ports.approval_secret(), approval),
        artifact_id,
        grant.generation,
        grant.proposer,
        approval.expires_at,
    )
