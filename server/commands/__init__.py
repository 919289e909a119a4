"""Subcommands of the `exactserve` CLI, one module each."""
