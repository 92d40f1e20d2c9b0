"""Chunks/s of the default embedding model on each onnxruntime execution
provider this runtime offers (CPU always; CUDA with onnxruntime-gpu and a GPU).

    uv run python bench/embedding_providers.py --texts 300

Texts are SciFact abstracts cut to ~200 words (../shared/data/scifact), or a
generated paragraph when the corpus is absent. One warm-up text, then every
text embedded once as the embedding stage does (batches of 32). A device that
is asked for and absent is reported with the warning the platform records.
"""

from __future__ import annotations

import argparse
import time

from bench.pipeline_tier import DEFAULT_CORPUS
from groundwork.embedding_models import model_by_key
from resources.composition.settings import GroundworkSettings
from resources.models.embeddings import load_embedding_provider


def texts(count: int) -> list[str]:
    if (DEFAULT_CORPUS / "corpus.jsonl").is_file():
        from evals.beir import load_corpus

        out = []
        for doc in load_corpus(DEFAULT_CORPUS):
            out.append(" ".join(f"{doc.title}. {doc.text}".split()[:200]))
            if len(out) == count:
                return out
    return [f"Paragraph {i} about rivers, stones and harbors. " * 20 for i in range(count)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=300)
    args = parser.parse_args()
    settings = GroundworkSettings.from_env()
    model = model_by_key(settings.default_model_key)
    sample = texts(args.texts)
    for device in ("cpu", "cuda"):
        provider = load_embedding_provider(model, settings.models_dir, device=device)
        provider.embed_documents(sample[:1])
        started = time.monotonic()
        for start in range(0, len(sample), 32):
            provider.embed_documents(sample[start : start + 32])
        seconds = time.monotonic() - started
        note = f"  ({provider.provider_warning})" if provider.provider_warning else ""
        print(
            f"{device:4s} -> {provider.execution_provider:24s} "
            f"{len(sample) / seconds:7.1f} chunks/s{note}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
