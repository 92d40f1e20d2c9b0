"""OpenSearch adapters."""
