"""The closed-loop mapping report's model side: compile-time mapping accuracy per op and shape
bucket, the cost of retuning (compile time, kernel memory), runtime adaptation gain and ranked
retuning actions. Pure numpy/polars; the packet glue lives in `triage.mapping.report`.

See model/mapping/README.md for the mechanisms and the `handoff-mapping-report/1` schema.
"""
