"""handoff-workbench: the Textual app and the `workbench` command line."""
