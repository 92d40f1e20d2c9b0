"""BlobStore conformance: the contract in groundwork.ports.BlobStore, run
against every adapter (the filesystem folder and the in-memory fake)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from groundwork.errors import NotFound
from groundwork.ports import BlobStore


class BlobStoreContract:
    @pytest.fixture
    def store(self, tmp_path: Path) -> BlobStore:
        raise NotImplementedError

    def test_is_the_port(self, store: BlobStore) -> None:
        assert isinstance(store, BlobStore)

    def test_put_then_get_returns_the_bytes(self, store: BlobStore) -> None:
        store.put("ab/cd/one", b"hello")
        assert store.get("ab/cd/one") == b"hello"
        assert store.exists("ab/cd/one")

    def test_put_of_an_existing_key_is_a_no_op(self, store: BlobStore) -> None:
        store.put("k/same", b"first")
        store.put("k/same", b"first")
        assert list(store.list_keys()).count("k/same") == 1

    def test_put_file_streams_a_file_in(self, store: BlobStore, tmp_path: Path) -> None:
        source = tmp_path / "big.bin"
        payload = os.urandom(3 * 1024 * 1024 + 17)
        source.write_bytes(payload)
        store.put_file("k/big", source)
        assert store.get("k/big") == payload
        pieces = list(store.read_chunks("k/big", 1024 * 1024))
        assert len(pieces) == 4 and b"".join(pieces) == payload

    def test_missing_key_is_not_found(self, store: BlobStore) -> None:
        with pytest.raises(NotFound):
            store.get("k/none")
        with pytest.raises(NotFound):
            next(iter(store.read_chunks("k/none")))
        assert not store.exists("k/none")

    def test_delete_removes_and_is_idempotent(self, store: BlobStore) -> None:
        store.put("k/gone", b"x")
        store.delete("k/gone")
        store.delete("k/gone")
        assert not store.exists("k/gone")
        assert "k/gone" not in set(store.list_keys())

    def test_list_keys_lists_every_stored_key(self, store: BlobStore) -> None:
        for key in ("a/1", "a/2", "b/3"):
            store.put(key, key.encode())
        assert {"a/1", "a/2", "b/3"} <= set(store.list_keys())


class TestFilesystemBlobStore(BlobStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> BlobStore:
        from resources.blobs.filesystem import FilesystemBlobStore

        return FilesystemBlobStore(tmp_path / "blobs")

    def test_keys_cannot_escape_the_folder(self, store: BlobStore) -> None:
        from groundwork.errors import StoreError

        with pytest.raises(StoreError):
            store.put("../outside", b"x")


class TestInMemoryBlobStore(BlobStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> BlobStore:
        from tests.fakes import InMemoryBlobStore

        return InMemoryBlobStore()
