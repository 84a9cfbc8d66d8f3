"""Command-line tools (thin wrappers over the library; nothing imports them)."""
