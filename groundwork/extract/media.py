"""Audio and video through the TranscriptionProvider port: timestamped
segments become paragraph blocks located by start/end time."""

from __future__ import annotations

from groundwork.documents import Block, BlockKind, FailureReason, Location
from groundwork.extract.base import Extracted, ExtractionContext, Refused


def extract_media(data: bytes, ctx: ExtractionContext) -> Extracted:
    if ctx.transcriber is None:
        raise Refused(
            FailureReason.UNSUPPORTED_TYPE,
            "audio and video need a transcription provider; none is configured",
        )
    try:
        duration = ctx.transcriber.duration_seconds(data)
    except Exception as exc:  # the container library raises its own types on damaged media
        raise Refused(
            FailureReason.MALFORMED, f"not a readable audio or video file: {exc}"
        ) from exc
    if duration > ctx.limits.max_media_seconds:
        raise Refused(
            FailureReason.TOO_LARGE,
            f"{duration / 60:.0f} minutes; the limit is {ctx.limits.max_media_seconds / 60:.0f} minutes",
        )
    segments = ctx.transcriber.transcribe(data, ctx.filename)
    blocks = [
        Block(
            BlockKind.PARAGRAPH,
            s.text,
            Location(start_seconds=round(s.start_seconds, 2), end_seconds=round(s.end_seconds, 2)),
            confidence=s.confidence,
        )
        for s in segments
    ]
    return Extracted(blocks=blocks, warnings=[] if blocks else ["no speech was recognised"])
