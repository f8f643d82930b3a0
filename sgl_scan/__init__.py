"""sgl-scan: answers speculative-decoding integration questions about an SGLang source tree."""

__version__ = "0.1.0"
