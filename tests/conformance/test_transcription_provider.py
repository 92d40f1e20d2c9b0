"""TranscriptionProvider conformance: the contract in groundwork.ports, run
against faster-whisper (the tiny.en model shipped in a PyPI package) and the
in-memory fake the fast tests may use.

The contract: `duration_seconds` reads the container's length without
decoding (so length is bounded before any work); `transcribe` gives the
speech's words in segments whose timestamps start at or after zero, never run
backwards and end after they start, each with a confidence in [0, 1]."""

from __future__ import annotations

import hashlib
import io
import shutil
import wave
from pathlib import Path

import pytest

from groundwork.ports import TranscriptionProvider, TranscriptSegment
from testbed import documents as make
from tests.fakes import ScriptedTranscriber

SPOKEN = "The quarterly revenue rose eleven percent."

pytestmark = pytest.mark.skipif(
    shutil.which("espeak-ng") is None, reason="espeak-ng not installed (./run installs it)"
)


def _wav_seconds(data: bytes) -> float:
    with wave.open(io.BytesIO(data)) as audio:
        return audio.getnframes() / audio.getframerate()


class TranscriptionContract:
    @pytest.fixture
    def speech(self, tmp_path: Path) -> bytes:
        data = make.speech_wav(SPOKEN, tmp_path)
        assert data is not None
        return data

    @pytest.fixture
    def transcriber(self, speech: bytes) -> TranscriptionProvider:
        raise NotImplementedError

    def test_is_the_port(self, transcriber: TranscriptionProvider) -> None:
        assert isinstance(transcriber, TranscriptionProvider)

    def test_duration_is_read_from_the_container(
        self, transcriber: TranscriptionProvider, speech: bytes
    ) -> None:
        assert transcriber.duration_seconds(speech) == pytest.approx(_wav_seconds(speech), abs=0.1)

    def test_speech_comes_back_in_ordered_segments(
        self, transcriber: TranscriptionProvider, speech: bytes
    ) -> None:
        segments = transcriber.transcribe(speech, "memo.wav")
        text = " ".join(s.text for s in segments).lower()
        assert "quarterly revenue" in text and ("eleven" in text or "11" in text)
        starts = [s.start_seconds for s in segments]
        assert starts == sorted(starts) and starts[0] >= 0.0
        for segment in segments:
            assert segment.end_seconds > segment.start_seconds
            assert segment.end_seconds <= _wav_seconds(speech) + 0.5
            assert 0.0 <= segment.confidence <= 1.0


class TestWhisperTranscriber(TranscriptionContract):
    @pytest.fixture
    def transcriber(self, speech: bytes) -> TranscriptionProvider:
        from resources.models.transcription_whisper import WhisperTranscriber

        return WhisperTranscriber()


class TestScriptedTranscriber(TranscriptionContract):
    @pytest.fixture
    def transcriber(self, speech: bytes) -> TranscriptionProvider:
        seconds = _wav_seconds(speech)
        return ScriptedTranscriber(
            {hashlib.sha256(speech).hexdigest(): (TranscriptSegment(0.0, seconds, SPOKEN, 0.9),)}
        )
