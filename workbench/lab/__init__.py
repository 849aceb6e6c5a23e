"""Tune's engine (Baseline, Diagnose, Tune): runs, config, views, charts."""
