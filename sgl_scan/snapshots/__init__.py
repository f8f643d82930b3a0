"""snapshots stage of sgl-scan."""
