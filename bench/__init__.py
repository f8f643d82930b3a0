"""Benchmarks: sgl-scan against grep, Semgrep, rsync and scp on a real SGLang tree (`python bench/run.py`)."""
