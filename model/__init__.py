"""The accelerator model: compile plan (ops, fusion, tiles, kernel cost) and runtime (queues, cores, HBM).

Pure numpy/polars. Never imports textual, yaml or anything from `packets`/`workbench`:
imports go one way, workbench -> packets -> model.
"""
