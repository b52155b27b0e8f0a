"""A model folder an engine can serve with dummy weights: config.json + an offline tokenizer.

The tokenizer is a ``WordLevel`` model over ``w0 … w{V-1}`` (the model's BOS/EOS/pad ids become
special tokens) with a ``WhitespaceSplit`` pre-tokenizer, so every id in the vocabulary decodes and
re-encodes exactly. Engines then initialise random weights (``--load-format dummy``): speed does
not depend on weight values, so any architecture can be benchmarked without downloading weights.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import importlib.resources
import json
import sys
from pathlib import Path
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from validate.errors import ModelDirError

CONFIG_PACKAGE = "capacity.model_configs"
# Vocabulary sizes that transformers fills in when a config.json leaves them out.
DEFAULT_VOCAB_SIZES = {"gemma3": 262_208, "gemma3_text": 262_208}
# Gemma 3's special ids (tokenizer.json of google/gemma-3-*): pad 0, eos 1, bos 2.
DEFAULT_SPECIAL_IDS = {"gemma3": {"pad_token_id": 0, "bos_token_id": 2}}
# Gemma 3's newline tokens (ids 107-110 of its tokenizer.json): vLLM's Gemma 3 processor looks them up by text.
GEMMA3_NEWLINES = {107: "\n", 108: "\n\n", 109: "\n\n\n", 110: "\n\n\n\n"}


class ModelInfo(BaseModel):
    """What the validator needs to know about a model folder."""

    model_config = ConfigDict(frozen=True)

    model_id: str
    path: str
    config_sha256: str
    vocab_size: int
    special_ids: list[int]
    max_position_embeddings: int | None = None


def _configs_dir() -> Path:
    """capacity/model_configs without running capacity/__init__.py (it imports the heavy model)."""
    if "capacity" not in sys.modules:
        spec = importlib.machinery.PathFinder.find_spec("capacity")
        for location in (spec.submodule_search_locations or []) if spec else []:
            folder = Path(location) / "model_configs"
            if folder.is_dir():
                return folder
    try:
        return Path(str(importlib.resources.files(CONFIG_PACKAGE)))
    except ModuleNotFoundError as err:
        raise ModelDirError(f"cannot find the model catalog package {CONFIG_PACKAGE}: {err}") from None


@functools.cache
def _naming() -> Any:
    """capacity/model_configs/__init__.py (the catalog's naming rule), loaded by path: it imports nothing."""
    path = _configs_dir() / "__init__.py"
    spec = importlib.util.spec_from_file_location("_llmcap_catalog_naming", path)
    if spec is None or spec.loader is None:
        raise ModelDirError(f"{path}: cannot load the model catalog's naming rule")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def catalog_file_stem(model_id: str) -> str:
    return _naming().file_stem(model_id)


def catalog_ids() -> list[str]:
    return sorted(_naming().model_id(p.stem) for p in _configs_dir().glob("*.json"))


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ModelDirError(f"cannot read {path}: {err}") from None
    if not isinstance(data, dict):
        raise ModelDirError(f"{path} is not a JSON object")
    return data


def resolve_config(model: str) -> tuple[str, Path]:
    """(model id, config.json path) for a catalog id, a config.json path or a model folder."""
    path = Path(model)
    if path.is_dir() and (path / "config.json").is_file():
        return path.name, path / "config.json"
    if path.is_file():
        return path.parent.name if path.name == "config.json" else path.stem, path
    candidate = _configs_dir() / f"{catalog_file_stem(model)}.json"
    if candidate.is_file():
        return _naming().model_id(model), candidate
    known = catalog_ids()
    lowered = [k for k in known if model.lower().split("/")[-1] in k.lower()]
    hint = f" (did you mean: {', '.join(lowered[:3])}?)" if lowered else f" (catalog: {', '.join(known)})"
    raise ModelDirError(f"{model!r} is neither a catalog id nor a config.json or model folder{hint}")


def _ids(value: Any) -> list[int]:
    if isinstance(value, int):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, int)]
    return []


def describe(config: dict[str, Any]) -> tuple[int, dict[str, list[int]], int | None]:
    """(vocab size, special ids by role, max position embeddings), looking into text_config too."""
    text = config.get("text_config") or {}
    model_type = config.get("model_type", "")
    vocab = config.get("vocab_size") or text.get("vocab_size") or DEFAULT_VOCAB_SIZES.get(model_type)
    if not isinstance(vocab, int) or vocab < 2:
        raise ModelDirError(f"config.json has no usable vocab_size (model_type {model_type!r})")
    defaults = DEFAULT_SPECIAL_IDS.get(model_type, {})
    roles: dict[str, list[int]] = {}
    for role in ("bos_token_id", "eos_token_id", "pad_token_id"):
        value = config.get(role, text.get(role, defaults.get(role)))
        roles[role] = [i for i in _ids(value) if 0 <= i < vocab]
    for role in ("image_token_index", "boi_token_index", "eoi_token_index", "image_token_id"):
        roles[role] = [i for i in _ids(config.get(role)) if 0 <= i < vocab]
    max_pos = config.get("max_position_embeddings") or text.get("max_position_embeddings")
    return vocab, roles, max_pos if isinstance(max_pos, int) else None


def _special_names(roles: dict[str, list[int]]) -> dict[int, str]:
    names: dict[int, str] = {}
    base = {"bos_token_id": "<s>", "eos_token_id": "</s>", "pad_token_id": "<pad>",
            "image_token_index": "<image_soft_token>", "image_token_id": "<image_soft_token>",
            "boi_token_index": "<start_of_image>", "eoi_token_index": "<end_of_image>"}
    for role, ids in roles.items():
        for n, token_id in enumerate(ids):
            name = base[role] if n == 0 else f"{base[role][:-1]}_{n}>"
            if token_id not in names:
                names[token_id] = name if name not in names.values() else f"{name[:-1]}_{token_id}>"
    return names


def _write_tokenizer(out: Path, vocab_size: int, names: dict[int, str], max_len: int | None,
                     extra: dict[str, str] | None = None) -> None:
    try:
        from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
    except ImportError:
        raise ModelDirError(
            "writing an offline tokenizer needs the `tokenizers` package (pip install tokenizers), "
            "or pass a model folder that already has tokenizer.json"
        ) from None
    vocab = {names.get(i, f"w{i}"): i for i in range(vocab_size)}
    unk = names.get(0, "w0")
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.add_special_tokens([AddedToken(n, special=True) for n in names.values()])
    tokenizer.save(str(out / "tokenizer.json"))
    by_role = {v: k for k, v in names.items()}
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": max_len or 1_000_000,
        "clean_up_tokenization_spaces": False,
        "unk_token": unk,
        "chat_template": "{% for m in messages %}{{ m['content'] }} {% endfor %}",
    }
    for key, name in (("bos_token", "<s>"), ("eos_token", "</s>"), ("pad_token", "<pad>")):
        if name in by_role:
            config[key] = name
    if extra:
        config["extra_special_tokens"] = extra
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=1))


def _gemma3_processor(config: dict[str, Any], names: dict[int, str]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Gemma 3's multimodal processor (vLLM builds it even for text prompts): (files to write — the image
    processor of google/gemma-3-*-it, 896 px SigLIP, 256 tokens per image — and the tokenizer's image
    tokens). Nothing for every other model."""
    vision = config.get("vision_config")
    if config.get("model_type") != "gemma3" or not isinstance(vision, dict):
        return {}, {}
    roles = {"boi_token": config.get("boi_token_index"), "eoi_token": config.get("eoi_token_index"),
             "image_token": config.get("image_token_index")}
    if not all(isinstance(i, int) and i in names for i in roles.values()):
        return {}, {}
    size = vision.get("image_size", 896)
    per_image = config.get("mm_tokens_per_image", 256)
    image = {"image_processor_type": "Gemma3ImageProcessor", "processor_class": "Gemma3Processor",
             "do_resize": True, "size": {"height": size, "width": size}, "resample": 2, "do_rescale": True,
             "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": [0.5] * 3, "image_std": [0.5] * 3,
             "do_convert_rgb": None, "do_pan_and_scan": None, "image_seq_length": per_image}
    files = {"preprocessor_config.json": image,
             "processor_config.json": {"processor_class": "Gemma3Processor", "image_seq_length": per_image}}
    return files, {role: names[i] for role, i in roles.items()}


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def special_ids_of(folder: Path | None, roles: dict[str, list[int]]) -> list[int]:
    """Ids a prompt must avoid: the config's special roles plus the tokenizer's added tokens."""
    ids = {i for values in roles.values() for i in values}
    tokenizer_file = folder / "tokenizer.json" if folder is not None else None
    if tokenizer_file is not None and tokenizer_file.is_file():
        added = _read_json(tokenizer_file).get("added_tokens") or []
        ids.update(t["id"] for t in added if isinstance(t, dict) and isinstance(t.get("id"), int))
    return sorted(ids)


def model_info(folder: Path, model_id: str) -> ModelInfo:
    """ModelInfo of a folder that already holds config.json (and usually a tokenizer)."""
    config = _read_json(folder / "config.json")
    vocab, roles, max_pos = describe(config)
    return ModelInfo(model_id=model_id, path=str(folder), config_sha256=sha256_file(folder / "config.json"),
                     vocab_size=vocab, special_ids=special_ids_of(folder, roles), max_position_embeddings=max_pos)


def config_info(model: str) -> ModelInfo:
    """ModelInfo straight from a catalog id, config.json or folder, writing nothing."""
    model_id, config_path = resolve_config(model)
    vocab, roles, max_pos = describe(_read_json(config_path))
    folder = config_path.parent
    specials = special_ids_of(folder if config_path.name == "config.json" else None, roles)
    return ModelInfo(model_id=model_id, path=str(folder), config_sha256=sha256_file(config_path),
                     vocab_size=vocab, special_ids=specials, max_position_embeddings=max_pos)


def text_decoder(folder: Path) -> Callable[[list[int]], str]:
    """ids -> text with the folder's tokenizer.json (for engines that only take text prompts)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise ModelDirError("text prompts need the `tokenizers` package (pip install tokenizers)") from None
    path = folder / "tokenizer.json"
    if not path.is_file():
        raise ModelDirError(f"text prompts need a tokenizer; {folder} has no tokenizer.json")
    tokenizer = Tokenizer.from_file(str(path))
    return lambda ids: tokenizer.decode(ids, skip_special_tokens=False)


def prepare_model_dir(model: str, out_dir: Path) -> ModelInfo:
    """A servable folder for ``model``: a folder with config + tokenizer is used as is; otherwise
    (catalog id, config.json, folder without tokenizer) one is written into ``out_dir``."""
    model_id, config_path = resolve_config(model)
    source = config_path.parent
    if config_path.name == "config.json" and (source / "tokenizer.json").is_file():
        return model_info(source, model_id)
    config = _read_json(config_path)
    vocab, roles, max_pos = describe(config)
    out_dir.mkdir(parents=True, exist_ok=True)
    # The config is copied byte for byte (Gemma 3 keeps its multimodal parts), so its hash matches.
    (out_dir / "config.json").write_bytes(config_path.read_bytes())
    names = _special_names(roles)
    processor_files, image_tokens = _gemma3_processor(config, names)
    if processor_files:
        names.update({i: t for i, t in GEMMA3_NEWLINES.items() if i < vocab and i not in names})
    _write_tokenizer(out_dir, vocab, names, max_pos, image_tokens)
    for filename, content in processor_files.items():
        (out_dir / filename).write_text(json.dumps(content, indent=1))
    generation = {k: (v[0] if len(v) == 1 else v) for k, v in roles.items() if v and k.endswith("token_id")}
    (out_dir / "generation_config.json").write_text(json.dumps(generation, indent=1))
    return model_info(out_dir, model_id)
