"""Runs: kernel files, the run record, the SQLite store, background jobs."""
