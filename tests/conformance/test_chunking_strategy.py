"""ChunkingStrategy conformance: the contract in
groundwork.chunking.ChunkingStrategy, run against the structure-aware
strategy (the one the chunks stage uses) and the block-per-chunk fake."""

from __future__ import annotations

import re

import pytest

from groundwork.chunking import ChunkingPolicy, ChunkingStrategy, StructureAwareChunking
from groundwork.documents import Block, BlockKind, Location
from groundwork.extract.markdown import markdown_blocks
from tests.fakes_parsing import BlockPerChunk

DOC = """# Quarterly Review

## By region

Revenue rose 9% in Europe. Asia held steady at 2.7M while the Americas fell.

| Region | Revenue |
|---|---|
| Europe | 4.6M |
| Asia | 2.7M |

## Risks

Hardware costs rose. Freight delays lengthened in the third quarter.

- supplier concentration
- currency exposure
"""


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text))


class ChunkingStrategyContract:
    @pytest.fixture
    def strategy(self) -> ChunkingStrategy:
        raise NotImplementedError

    def _chunk(self, strategy: ChunkingStrategy, blocks: list[Block]) -> list:
        return strategy.chunk(blocks, tenant_id="t1", source_id="s1", version_id="v1")

    def test_is_the_port(self, strategy: ChunkingStrategy) -> None:
        assert isinstance(strategy, ChunkingStrategy)
        assert strategy.name and strategy.max_chars > 0

    def test_deterministic_ids_from_version_and_position(self, strategy: ChunkingStrategy) -> None:
        first = self._chunk(strategy, markdown_blocks(DOC))
        again = self._chunk(strategy, markdown_blocks(DOC))
        assert first and first == again
        assert [c.position for c in first] == list(range(len(first)))
        other_version = strategy.chunk(
            markdown_blocks(DOC), tenant_id="t1", source_id="s1", version_id="v2"
        )
        assert not {c.chunk_id for c in first} & {c.chunk_id for c in other_version}

    def test_every_chunk_names_what_it_was_asked_for(self, strategy: ChunkingStrategy) -> None:
        for chunk in self._chunk(strategy, markdown_blocks(DOC)):
            assert (chunk.tenant_id, chunk.source_id, chunk.version_id) == ("t1", "s1", "v1")
            assert chunk.body.strip() and chunk.token_count > 0
            assert chunk.location.line_start is not None

    def test_no_word_of_the_text_is_lost(self, strategy: ChunkingStrategy) -> None:
        blocks = markdown_blocks(DOC)
        expected: set[str] = set()
        for block in blocks:
            if block.kind != BlockKind.HEADING:
                expected |= _words(block.table.to_markdown() if block.table else block.text)
        chunked = set().union(*(_words(c.body) for c in self._chunk(strategy, blocks)))
        assert expected <= chunked, expected - chunked

    def test_bounded_whatever_the_input(self, strategy: ChunkingStrategy) -> None:
        # one run without whitespace, as a base64 blob or a poisoned file is
        run = Block(BlockKind.PARAGRAPH, "x" * (strategy.max_chars * 5 + 17), Location(1))
        prose = Block(BlockKind.PARAGRAPH, "word " * 3_000, Location(2))
        chunks = self._chunk(strategy, [run, prose])
        assert chunks and all(len(c.body) <= strategy.max_chars for c in chunks)
        assert sum(c.body.count("x") for c in chunks) == strategy.max_chars * 5 + 17

    def test_nothing_in_gives_nothing_out(self, strategy: ChunkingStrategy) -> None:
        assert self._chunk(strategy, []) == []
        blank = [Block(BlockKind.PARAGRAPH, "   ", Location(1))]
        assert self._chunk(strategy, blank) == []


class TestStructureAwareChunking(ChunkingStrategyContract):
    @pytest.fixture
    def strategy(self) -> ChunkingStrategy:
        return StructureAwareChunking()


class TestStructureAwareChunkingSmall(ChunkingStrategyContract):
    """Small windows exercise the sentence, word and row splits."""

    @pytest.fixture
    def strategy(self) -> ChunkingStrategy:
        return StructureAwareChunking(policy=ChunkingPolicy(max_tokens=24, max_chars=300))


class TestBlockPerChunkFake(ChunkingStrategyContract):
    @pytest.fixture
    def strategy(self) -> ChunkingStrategy:
        return BlockPerChunk(max_chars=500)
