"""Deploying images to a board's external flash: programmer backends, the gate before any write,
per-board records of verified bytes, and the sector diff that writes only what changed."""
