"""One module per `workbench` sub-command; each has `add_parser(subparsers)` and `run(args)`."""
