"""Measured telemetry files: reading, comparison inputs, synthetic runs."""
