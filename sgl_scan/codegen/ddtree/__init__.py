"""`sgl-scan gen ddtree`: a DDTree worker, Triton kernels and registration that fit one snapshot."""
