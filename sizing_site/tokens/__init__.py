"""Per-user API tokens (issue 15): stored hashed, shown once, optionally limited to one
organization and to reading."""
