"""Test-only helpers shared by several test modules (fake backends for server tests)."""
