"""drafter stage: check an EAGLE-3 drafter checkpoint's d2t/t2d vocabulary mapping.

checkpoint (read tensors and config.json) → checks (frozen results) → compat (against a scanned
SGLang's d2t sites) → render (text/JSON). `diff` compares the mappings of two drafters.
numpy and safetensors (the `drafter` extra) are imported lazily, only when a checkpoint is read.
"""
