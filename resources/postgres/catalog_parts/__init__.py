"""The Postgres catalog, one module per concern (see resources/postgres/catalog.py)."""
