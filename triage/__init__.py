"""What the workbench does with a packet: runs, sweeps, review, mapping, telemetry."""
