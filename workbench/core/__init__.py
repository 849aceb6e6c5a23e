"""The working packet, drafts, forms, keys, steps and UI-loop plumbing."""
