"""Extraction in a child process that can be killed.

Parsers run on attacker-controlled bytes: pdfminer took 18 s on one page here,
and a decompression bomb can eat all memory. The child (a plain
`python -m resources.engines.extraction_worker` subprocess, so nothing depends on how
the parent was started) has an address-space ceiling (RLIMIT_AS); the parent
enforces the timeout from outside by killing it, and the next document gets a
fresh child. Document problems come back as failure values; infrastructure
errors (OCR missing) are re-raised in the parent.

A child that dies at its memory ceiling is not a damaged file: a native parser
whose allocation fails under RLIMIT_AS aborts the process (pdfium: SIGABRT from
std::bad_alloc) instead of raising MemoryError. The parent reaps the child with
wait4 to read its peak resident size; a child killed by a signal after growing
to a large share of its ceiling is reported `out-of-memory`, not `malformed`.

Wire format: 8-byte big-endian length, then a pickle, both ways. Only the
parent's own objects are unpickled by the child and vice versa.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import select
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from groundwork.documents import (
    ExtractionFailure,
    ExtractionLimits,
    ExtractionResult,
    FailureReason,
)
from groundwork.errors import GroundworkError
from groundwork.ports import TranscriptionProvider, TranscriptSegment

DEFAULT_MEMORY_LIMIT = 3 * 1024 * 1024 * 1024
#: Children that aborted at their address-space ceiling on a flate bomb peaked at
#: 55-69% of it in resident memory (the rest is mapped libraries and arenas); one
#: that crashes for another reason stays near its ~110 MB baseline.
AT_CEILING_SHARE = 0.4
_HEADER = struct.Struct(">Q")


def _write(stream: IO[bytes], payload: Any) -> None:
    body = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


def _read_exact(stream: IO[bytes], size: int) -> bytes:
    chunks: list[bytes] = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read(stream: IO[bytes]) -> Any:
    (size,) = _HEADER.unpack(_read_exact(stream, _HEADER.size))
    return pickle.loads(_read_exact(stream, size))


class ExtractionWorker:
    def __init__(self, memory_limit: int = DEFAULT_MEMORY_LIMIT, with_ocr: bool = True) -> None:
        self.memory_limit = memory_limit
        self.with_ocr = with_ocr
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the child now: its imports (~0.4 s) then overlap whatever the
        caller does before the first document. Optional: the first call
        starts it otherwise (the pipeline relies on that, so a run with nothing
        to extract starts no child)."""
        self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            env = dict(os.environ, OMP_THREAD_LIMIT=os.environ.get("OMP_THREAD_LIMIT", "1"))
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "resources.engines.extraction_worker",
                    str(self.memory_limit),
                    str(int(self.with_ocr)),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
        return self._process

    def __call__(
        self,
        data: bytes | Path,
        media_type: str,
        filename: str,
        limits: ExtractionLimits | None = None,
    ) -> ExtractionResult:
        """`data` as a Path (a large object spooled to a local file) goes to the
        child by name: the child reads it under its own memory ceiling, and
        neither this process nor the pipe holds the bytes."""
        limits = limits or ExtractionLimits()
        process = self._start()
        assert process.stdin is not None and process.stdout is not None
        try:
            _write(process.stdin, (data, media_type, filename, limits))
            deadline = time.monotonic() + limits.timeout_seconds
            ready, _, _ = select.select(
                [process.stdout], [], [], max(0.0, deadline - time.monotonic())
            )
            if not ready:
                self._kill()
                return ExtractionFailure(
                    FailureReason.TIMED_OUT,
                    f"extraction took longer than {limits.timeout_seconds:.0f} s",
                )
            status, payload = _read(process.stdout)
        except (
            EOFError,
            BrokenPipeError,
            ConnectionResetError,
            struct.error,
            pickle.UnpicklingError,
        ):
            code, peak = _reap(process)
            self._kill()
            if code is not None and code < 0 and peak >= self.memory_limit * AT_CEILING_SHARE:
                return ExtractionFailure(
                    FailureReason.OUT_OF_MEMORY,
                    f"the extractor process was killed at its memory ceiling of "
                    f"{self.memory_limit} bytes (signal {-code}, peak {peak} bytes resident)",
                )
            return ExtractionFailure(
                FailureReason.MALFORMED,
                f"the extractor process died on this file (exit code {code})",
            )
        if status == "error":
            raise payload
        result: ExtractionResult = payload
        return result

    def _kill(self) -> None:
        if self._process is not None:
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait(timeout=10)
            for stream in (self._process.stdin, self._process.stdout):
                if stream is not None:
                    stream.close()
        self._process = None

    def close(self) -> None:
        if self._process is not None and self._process.stdin is not None:
            self._process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5)
        self._kill()

    def __enter__(self) -> ExtractionWorker:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _reap(process: subprocess.Popen[bytes]) -> tuple[int | None, int]:
    """Exit code and peak resident bytes of a child whose pipe closed. wait4
    returns the child's resource usage, which Popen.poll would discard; a child
    still alive after a few seconds is left to `_kill` (code None)."""
    deadline = time.monotonic() + 5.0
    while True:
        try:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        except ChildProcessError:  # already reaped
            return process.returncode, 0
        if pid:
            code = os.waitstatus_to_exitcode(status)
            process.returncode = code
            return code, usage.ru_maxrss * 1024  # kilobytes on Linux
        if time.monotonic() > deadline:
            return None, 0
        time.sleep(0.02)


def _serve(memory_limit: int, with_ocr: bool) -> None:
    # The protocol owns the real stdout; anything a library prints goes to stderr.
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = os.fdopen(os.dup(0), "rb")
    resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    from groundwork.extract import extract

    ocr = None
    if with_ocr:
        try:
            from resources.models.ocr_tesseract import TesseractOcr

            ocr = TesseractOcr()
        except GroundworkError:
            ocr = None
    transcriber = _LazyTranscriber()
    from resources.models.vision import OpenAICompatibleVision, configured_vision

    configured = configured_vision()  # off unless GROUNDWORK_VISION_URL is set
    vision = configured if isinstance(configured, OpenAICompatibleVision) else None
    while True:
        try:
            data, media_type, filename, limits = _read(requests)
        except EOFError:
            return
        try:
            if isinstance(data, Path):
                size = data.stat().st_size
                if size > limits.max_bytes:  # refused before the read: it may be far larger
                    _write(channel, ("ok", _too_large(size, limits)))
                    continue
                data = data.read_bytes()
            result = extract(
                data,
                media_type,
                filename,
                limits,
                ocr=ocr,
                transcriber=transcriber,
                vision=vision,
            )
            _write(channel, ("ok", result))
        except GroundworkError as exc:
            _write(channel, ("error", exc))
        except MemoryError:
            _write(
                channel,
                (
                    "ok",
                    ExtractionFailure(
                        FailureReason.OUT_OF_MEMORY, "needs more memory than allowed"
                    ),
                ),
            )


def _too_large(size: int, limits: ExtractionLimits) -> ExtractionFailure:
    return ExtractionFailure(
        FailureReason.TOO_LARGE, f"{size} bytes; the limit is {limits.max_bytes} bytes"
    )


class _LazyTranscriber:
    """Loads the Whisper model on the first audio or video file only."""

    def __init__(self) -> None:
        self._inner: TranscriptionProvider | None = None

    def _get(self) -> TranscriptionProvider:
        if self._inner is None:
            from resources.models.transcription_whisper import WhisperTranscriber

            self._inner = WhisperTranscriber()
        return self._inner

    def duration_seconds(self, media: bytes) -> float:
        from resources.models.transcription_whisper import media_duration_seconds

        return media_duration_seconds(media)

    def transcribe(self, media: bytes, filename: str) -> tuple[TranscriptSegment, ...]:
        return self._get().transcribe(media, filename)


if __name__ == "__main__":
    _serve(int(sys.argv[1]), sys.argv[2] == "1")
