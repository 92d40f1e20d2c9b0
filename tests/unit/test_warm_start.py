"""What an ingest run pays before its first document is searchable.

Upload -> searchable went from ~3 s to ~10 s as formats and features were
added: each run's extraction child imported every format's parsers and
pandas (through pytesseract) before its first PDF, and the chunks step built
the embedding model's session just to count tokens. These tests hold the
child's start-up lean and the session off the token counter's path.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from groundwork.embedding_models import MINILM_L6_V2_INT8
from resources.models.embeddings import OnnxEmbeddingProvider, _minilm_onnx, minilm_tokenizer_json


def test_the_extraction_child_imports_no_parser_it_was_not_asked_for() -> None:
    """What the extraction worker imports before its first document
    (resources/engines/extraction_worker.py `_serve`), in a fresh interpreter."""
    probe = (
        "import json, sys\n"
        "from groundwork.extract import extract\n"
        "from resources.models.ocr_tesseract import TesseractOcr\n"
        "try:\n"
        "    TesseractOcr()\n"
        "except Exception:\n"
        "    pass\n"
        "heavy = ['pandas', 'polars', 'openpyxl', 'pptx', 'docx', 'pytesseract']\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_a_format_imports_its_parser_on_its_first_document() -> None:
    probe = (
        "import json, sys\n"
        "from groundwork.extract import DOCX, extract\n"
        "before = 'docx' in sys.modules\n"
        "extract(b'PK not really a docx', DOCX, 'a.docx')\n"
        "print(json.dumps([before, 'docx' in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, True]


def test_tokens_are_counted_while_the_session_is_still_being_built() -> None:
    gate = threading.Event()

    def slow_model() -> bytes:
        gate.wait(30)
        return _minilm_onnx()

    provider = OnnxEmbeddingProvider(MINILM_L6_V2_INT8, slow_model, minilm_tokenizer_json())
    started = time.monotonic()
    assert provider.count_tokens("the parking garage closes at ten") > 3
    assert time.monotonic() - started < 1.0  # the model has not even been read
    gate.set()
    (vector,) = provider.embed_documents(["the parking garage closes at ten"])
    assert len(vector) == MINILM_L6_V2_INT8.dimension
    assert provider.execution_provider == "CPUExecutionProvider"


def test_a_model_that_does_not_load_fails_the_first_embedding_not_silently() -> None:
    provider = OnnxEmbeddingProvider(
        MINILM_L6_V2_INT8, lambda: b"not an onnx model", minilm_tokenizer_json()
    )
    assert provider.count_tokens("still counts") > 0
    with pytest.raises(Exception, match="(?i)protobuf|onnx|invalid|parse"):
        provider.embed_documents(["a text"])
    with pytest.raises(Exception, match="(?i)protobuf|onnx|invalid|parse"):
        provider.embed_query("a query")
