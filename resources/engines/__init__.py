"""Embedded engines the project starts and stops itself."""
