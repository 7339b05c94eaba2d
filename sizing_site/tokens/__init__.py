"""Per-user API tokens: stored hashed, shown once, optionally limited to one
organization and to reading."""
