"""PostgreSQL adapters: the catalog, pgvector and full-text indexes."""
