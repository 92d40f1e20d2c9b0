"""The embedding provider takes onnxruntime's CUDA execution provider when it
is configured and present, and otherwise embeds on CPU and says why (the
reason reaches the embedding step's metadata)."""

from __future__ import annotations

from groundwork.embedding_models import MINILM_L6_V2_INT8
from resources.composition.settings import GroundworkSettings
from resources.models.embeddings import execution_providers, load_embedding_provider


def test_cpu_unless_cuda_is_asked_for() -> None:
    assert execution_providers("cpu", ["CUDAExecutionProvider", "CPUExecutionProvider"]) == (
        ["CPUExecutionProvider"],
        None,
    )


def test_cuda_when_asked_for_and_present_with_cpu_behind_it() -> None:
    providers, warning = execution_providers(
        "cuda", ["CUDAExecutionProvider", "CPUExecutionProvider"]
    )
    assert providers == ["CUDAExecutionProvider", "CPUExecutionProvider"] and warning is None


def test_cuda_asked_for_on_a_cpu_only_runtime_falls_back_and_says_why() -> None:
    providers, warning = execution_providers("cuda", ["CPUExecutionProvider"])
    assert providers == ["CPUExecutionProvider"]
    assert warning is not None and "onnxruntime-gpu" in warning and "CPU" in warning


def test_the_loaded_provider_reports_what_embeds() -> None:
    settings = GroundworkSettings.from_env({"GROUNDWORK_EMBEDDING_DEVICE": "cuda"})
    assert settings.embedding_device == "cuda"
    provider = load_embedding_provider(MINILM_L6_V2_INT8, settings.models_dir, device="cuda")
    # this machine's onnxruntime is the CPU build
    assert provider.execution_provider == "CPUExecutionProvider"
    assert provider.provider_warning is not None
    assert len(provider.embed_documents(["a sentence"])[0]) == 384
