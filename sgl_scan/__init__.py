"""sgl-scan: answers speculative-decoding integration questions about an SGLang source tree."""

import time as _time

__version__ = "0.1.0"

# When this process first loaded sgl_scan: code changed on disk after it may not be the code running
# (a cache of what that code computes is not written then; `analyzer.cache.sources_settled`).
LOADED_NS = _time.time_ns()
