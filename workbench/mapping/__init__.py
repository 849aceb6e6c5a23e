"""The Mapping step's compute (textual-free)."""
