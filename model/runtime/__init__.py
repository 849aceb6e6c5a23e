"""The runtime model: workload, batching, core placement, shared-HBM contention, mapping
fallback, statistics, tail attribution, bottleneck classification and sweeps.

See model/runtime/README.md for the semantics and the validation against queueing theory.
"""
