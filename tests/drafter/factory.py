"""Write real EAGLE-3 drafter checkpoints (safetensors + config.json) for the drafter tests.

Sizes are realistic: a 32,000-token draft vocabulary inside a 163,840-token target vocabulary (the
Kimi-K2/K2.5 drafters of the seeds); weights other than the mapping are kept narrow so files stay small.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

DRAFT = 32_000
TARGET = 163_840
TARGET_LAYERS = 61
HIDDEN = 8


def hot_ids(seed: int = 0, draft: int = DRAFT, target: int = TARGET) -> np.ndarray:
    """A sorted draft vocabulary: the first 800 target ids (the frequent ones) plus a seeded sample."""
    rng = np.random.default_rng(seed)
    head = np.arange(800)
    rest = rng.choice(np.arange(800, target), size=draft - 800, replace=False)
    return np.sort(np.concatenate([head, rest])).astype(np.int64)


def offsets(ids: np.ndarray) -> np.ndarray:
    return ids - np.arange(ids.shape[0], dtype=np.int64)


def mask(ids: np.ndarray, target: int = TARGET) -> np.ndarray:
    t2d = np.zeros(target, dtype=bool)
    t2d[ids] = True
    return t2d


def config(**overrides) -> dict:
    base = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": HIDDEN,
        "num_hidden_layers": 1,
        "vocab_size": TARGET,
        "draft_vocab_size": DRAFT,
        "max_position_embeddings": 131072,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 29, 57], "use_aux_hidden_state": True},
    }
    for key, value in overrides.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return base


def tensors(d2t=None, t2d=None, draft: int = DRAFT, prefix: str = "") -> dict:
    """Mapping tensors (omit one with None) plus a draft head and fc layer."""
    out = {
        "lm_head.weight": np.zeros((draft, HIDDEN), dtype=np.float16),
        "fc.weight": np.zeros((HIDDEN, 3 * HIDDEN), dtype=np.float16),
    }
    if d2t is not None:
        out[prefix + "d2t"] = d2t
    if t2d is not None:
        out[prefix + "t2d"] = t2d
    return out


def write_drafter(folder: Path, weights: dict, cfg: dict | None = None) -> Path:
    """A drafter folder: model.safetensors and (unless cfg is None) config.json."""
    folder.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    if cfg is not None:
        (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    return folder


def good_drafter(folder: Path, seed: int = 0, **config_overrides) -> Path:
    ids = hot_ids(seed)
    return write_drafter(folder, tensors(offsets(ids), mask(ids)), config(**config_overrides))


def target_config(folder: Path, vocab: int = TARGET, layers: int = TARGET_LAYERS, nested: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    body = {"vocab_size": vocab, "num_hidden_layers": layers}
    data = {"architectures": ["KimiK25ForConditionalGeneration"], "text_config": body} if nested else body
    path = folder / "config.json"
    path.write_text(json.dumps(data))
    return path


def write_shards(folder: Path, shards: list[dict], cfg: dict | None = None, index: bool = False) -> Path:
    """A sharded drafter: model-0000k-of-0000n.safetensors per dict in `shards` (a tensor name may
    recur across shards), config.json, and with `index` a model.safetensors.index.json whose
    weight_map names each tensor's first shard (as a converter that wrote a stray copy would)."""
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"model-{k:05d}-of-{len(shards):05d}.safetensors" for k in range(1, len(shards) + 1)]
    weight_map: dict[str, str] = {}
    for name, weights in zip(names, shards):
        save_file(weights, str(folder / name), metadata={"format": "pt"})
        for tensor in weights:
            weight_map.setdefault(tensor, name)
    if index:
        (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    if cfg is not None:
        (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    return folder
