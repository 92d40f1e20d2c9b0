"""The HTTP retrieval service (FastAPI)."""
