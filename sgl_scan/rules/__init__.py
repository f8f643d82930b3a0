"""rules stage of sgl-scan."""
