"""One screen per step, plus the modal screens (help, draft recovery)."""
