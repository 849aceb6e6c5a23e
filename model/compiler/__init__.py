"""The compile-plan model: hardware envelopes, operator graphs, fusion, tiles, kernel cost,
autotuning, service-time tables, the fusion & tile-plan worksheet, and accuracy on measured data.

See model/compiler/README.md for the mechanisms and every parameter's source.
"""
