"""reports stage of sgl-scan."""
