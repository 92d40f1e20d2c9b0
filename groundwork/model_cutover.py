"""Which embedding model serves a tenant: a gated cutover with instant rollback.

A tenant moves to a new model only when that model's partition holds every
current version (nothing left to embed or publish) and its stores agree with
the catalog; the flip is one compare-and-set on the tenant row, and rolling
back is the same flip to the previous model, whose vectors are kept until
they are retired after a grace period.
"""

from __future__ import annotations

from dataclasses import dataclass

from groundwork.catalog import Catalog
from groundwork.errors import StaleGeneration
from groundwork.ports import KeywordIndex, VectorIndex
from groundwork.stages.publication import store_agreement


@dataclass(frozen=True, slots=True)
class SwitchRefused:
    """The new model is not ready; the reasons say what is missing."""

    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Switched:
    from_model: str
    to_model: str


SwitchOutcome = Switched | SwitchRefused


def switch_model(
    catalog: Catalog,
    vectors: VectorIndex,
    keywords: KeywordIndex,
    tenant_id: str,
    extra_gate: tuple[str, ...] = (),
) -> SwitchOutcome:
    """`extra_gate` carries reasons from other gates (eval regressions) to refuse on."""
    tenant = catalog.get_tenant(tenant_id)
    if tenant is None:
        return SwitchRefused((f"no tenant {tenant_id}",))
    target = vectors.model.key
    if tenant.active_model == target:
        return Switched(target, target)
    reasons = list(extra_gate)
    pending = catalog.pending_work(tenant_id, target)
    if pending["embed"] or pending["publish"]:
        reasons.append(
            f"{pending['embed']} versions to embed and {pending['publish']} to publish with {target}"
        )
    agreement = store_agreement(catalog, vectors, keywords, tenant_id)
    if not agreement.agrees:
        reasons.append(
            f"stores disagree for {target}: {len(agreement.missing_from_vectors)} chunks missing from vectors, "
            f"{len(agreement.unexpected_in_vectors)} unexpected"
        )
    if reasons:
        return SwitchRefused(tuple(reasons))
    if not catalog.switch_serving_model(tenant_id, target, tenant.active_model):
        raise StaleGeneration(
            f"the serving model of {tenant_id} changed meanwhile; reload and retry"
        )
    return Switched(tenant.active_model, target)


def rollback_model(catalog: Catalog, tenant_id: str) -> Switched:
    tenant = catalog.get_tenant(tenant_id)
    previous = catalog.previous_model(tenant_id) if tenant else None
    if tenant is None or previous is None:
        raise StaleGeneration(f"{tenant_id} has no previous model to roll back to")
    if not catalog.switch_serving_model(tenant_id, previous, tenant.active_model):
        raise StaleGeneration(
            f"the serving model of {tenant_id} changed meanwhile; reload and retry"
        )
    return Switched(tenant.active_model, previous)


def retire_models(
    catalog: Catalog, vector_indexes: dict[str, VectorIndex], tenant_id: str, grace_seconds: float
) -> dict[str, int]:
    """Drop the vectors of the model a tenant switched away from once the grace
    period is over (rollback is then no longer offered). Models being backfilled
    for a future switch are never touched."""
    retired: dict[str, int] = {}
    for model_key in catalog.models_to_retire(tenant_id, grace_seconds):
        index = vector_indexes.get(model_key)
        if index is None:
            continue
        retired[model_key] = index.delete_tenant(tenant_id)
        catalog.forget_model(tenant_id, model_key)
    return retired
