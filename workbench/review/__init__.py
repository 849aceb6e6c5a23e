"""The review steps: where outputs stand, renderings, signing."""
