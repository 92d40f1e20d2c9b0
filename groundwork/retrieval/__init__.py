"""The retrieval kernel: authorization-scoped legs, fusion, outcomes."""
