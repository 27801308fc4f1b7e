"""bench.py's sections, each registering its subcommands into the one CLI."""
