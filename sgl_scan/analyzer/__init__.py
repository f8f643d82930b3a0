"""analyzer stage of sgl-scan."""
