"""Evaluation: dataset loaders and retrieval metrics."""
