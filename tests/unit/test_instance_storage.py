"""dagster.yaml never carries this host's passfile: a worker host receives the
instance through the broker and must resolve the password from its own
environment (found when the authenticated topology ran `groundwork up`)."""

from __future__ import annotations

from resources.dagster_glue.instance import instance_storage


def test_one_machine_keeps_the_plain_url() -> None:
    storage = instance_storage("postgresql://postgres@127.0.0.1:5432/dagster")
    assert storage == {"postgres_url": "postgresql+psycopg2://postgres@127.0.0.1:5432/dagster"}


def test_an_authenticated_database_is_named_by_host_and_password_variable() -> None:
    url = (
        "postgresql://postgres@db:5433/dagster"
        "?sslmode=verify-full&sslnegotiation=direct&passfile=%2Fhome%2Fa%2Fpgpass"
    )
    storage = instance_storage(url)
    assert "postgres_url" not in storage
    block = storage["postgres_db"]
    assert block["password"] == {"env": "GROUNDWORK_DATABASE_PASSWORD"}
    assert "passfile" not in block["params"] and "pgpass" not in repr(storage)
    assert (block["hostname"], block["port"], block["db_name"]) == ("db", 5433, "dagster")
