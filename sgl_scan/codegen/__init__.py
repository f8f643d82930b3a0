"""codegen stage of sgl-scan."""
