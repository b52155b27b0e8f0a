"""A model's architecture, read from its Hugging Face ``config.json`` (facts only, no remote code).

Covers dense GQA/MQA/MHA, MoE (routed + shared experts, dense prefix layers), MLA (DeepSeek) and
sliding-window / hybrid local-global attention (Mistral, Gemma 3, gpt-oss), plus a ViT-style vision
tower for multimodal checkpoints (Gemma 3) whose weights an engine also loads.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from capacity.model.config_schema import (CONFIG_FILE_MAX_BYTES, QuantizationConfig, TextConfig, VisionConfig, read_text,
                                     read_top)
from capacity import model_configs
from capacity.errors import ConfigError, UnknownModelError, closest, flatten_validation_error, one_line

AttentionKind = Literal["full", "sliding"]


class Moe(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    num_experts: int = Field(gt=0)
    num_experts_per_token: int = Field(gt=0)
    expert_intermediate_size: int = Field(gt=0)
    num_shared_experts: int = Field(default=0, ge=0)
    shared_expert_intermediate_size: int = Field(default=0, ge=0)
    num_dense_layers: int = Field(default=0, ge=0, description="leading layers with a dense MLP (DeepSeek)")

    @model_validator(mode="after")
    def _top_k_within_experts(self) -> "Moe":
        if self.num_experts_per_token > self.num_experts:
            raise ValueError(f"{self.num_experts_per_token} experts per token out of {self.num_experts}")
        return self


class Mla(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kv_lora_rank: int
    q_lora_rank: int | None
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


class ModelArch(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    architecture: str
    num_layers: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    num_heads: int = Field(gt=0)
    num_kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    vocab_size: int = Field(gt=0)
    intermediate_size: int = Field(ge=0, description="dense MLP width")
    gated_mlp: bool = True
    tie_word_embeddings: bool = False
    layer_kinds: tuple[AttentionKind, ...]
    sliding_window: int | None = None
    max_position_embeddings: int = 0
    moe: Moe | None = None
    mla: Mla | None = None
    vision_params: int = Field(default=0, ge=0, description="vision tower + projector parameters")
    native_quantization: str | None = Field(default=None, description="'fp8' or 'mxfp4' when the checkpoint ships quantized")
    torch_dtype: str = "bfloat16"

    @functools.cached_property
    def num_sliding_layers(self) -> int:  # cached: the step simulator asks once per prefill chunk
        return sum(k == "sliding" for k in self.layer_kinds)

    @functools.cached_property
    def num_full_layers(self) -> int:
        return self.num_layers - self.num_sliding_layers

    @property
    def num_moe_layers(self) -> int:
        return 0 if self.moe is None else self.num_layers - self.moe.num_dense_layers

    @property
    def q_dim(self) -> int:
        return self.num_heads * self.head_dim


# transformers' config defaults for fields that released config.json files leave out (Gemma3TextConfig:
# max_position_embeddings=131072; vLLM takes its max_model_len from it).
DEFAULT_MAX_POSITIONS = {"gemma3": 131_072, "gemma3_text": 131_072}


def _layer_kinds(t: TextConfig) -> tuple[tuple[AttentionKind, ...], int | None]:
    num_layers, window, types = t.num_hidden_layers, t.sliding_window, t.layer_types
    if types is not None and len(types) == num_layers:
        kinds = tuple("sliding" if "sliding" in x else "full" for x in types)
        return kinds, (window if "sliding" in kinds else None)
    if not window or t.use_sliding_window is False:
        return ("full",) * num_layers, None
    pattern = t.sliding_window_pattern
    if pattern is not None and pattern > 1:  # Gemma 3: every pattern-th layer is global
        kinds = tuple("full" if (i + 1) % pattern == 0 else "sliding" for i in range(num_layers))
        return kinds, window
    if t.use_sliding_window and t.max_window_layers is not None:  # Qwen2-style
        kinds = tuple("sliding" if i >= t.max_window_layers else "full" for i in range(num_layers))
        return kinds, window if "sliding" in kinds else None
    if window >= (t.max_position_embeddings or 0) > 0:
        return ("full",) * num_layers, None
    return ("sliding",) * num_layers, window  # Mistral 7B v0.1: every layer windowed


def _vision_params(vision: VisionConfig | None, text_hidden: int) -> int:
    """ViT encoder: per layer 4·d² (attention) + 2·d·f (MLP); plus patch embedding and a projector."""
    if vision is None or not vision.model_fields_set:
        return 0
    d = vision.hidden_size
    f = vision.intermediate_size if vision.intermediate_size is not None else 4 * d
    layers, patch, channels, image = vision.num_hidden_layers, vision.patch_size, vision.num_channels, vision.image_size
    positions = (image // patch) ** 2
    encoder = layers * (4 * d * d + 2 * d * f)
    embed = channels * patch * patch * d + positions * d
    projector = d * text_hidden
    return int(encoder + embed + projector)


def _quantization(q: QuantizationConfig | None) -> str | None:
    if q is None:
        return None
    method = (q.quant_method or "").lower()
    if method == "mxfp4":
        return "mxfp4"
    if method == "fp8" or q.fmt == "e4m3":
        return "fp8"
    if method in ("awq", "gptq"):
        return "int4"
    return method or None


# transformers' defaults for fields some shipped configs leave out (Gemma 3's text_config)
MODEL_TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {"vocab_size": 262208, "sliding_window_pattern": 6, "hidden_activation": "gelu_pytorch_tanh",
                    "tie_word_embeddings": True},
}


def parse_config(cfg: Any, name: str = "custom", source: str | None = None) -> ModelArch:
    """Turn a config.json dict into a ModelArch. Every field read is checked first (capacity.model.config_schema);
    raises ConfigError on one line, naming `source` (the file; default: `name`) and the field."""
    src = source or name
    top = read_top(cfg, src)
    text = cfg
    text_keys: frozenset[str] = frozenset()
    if top.text_config is not None:
        text_keys = frozenset(top.text_config)
        text = {**{k: v for k, v in cfg.items() if k not in ("text_config", "vision_config")}, **top.text_config}
    model_type = text.get("model_type")
    text = {**MODEL_TYPE_DEFAULTS.get(model_type if isinstance(model_type, str) else "", {}), **text}
    t = read_text(text, src, text_keys)
    num_layers, hidden, num_heads = t.num_hidden_layers, t.hidden_size, t.num_attention_heads
    num_kv_heads = t.num_key_value_heads if t.num_key_value_heads is not None else num_heads
    head_dim = t.head_dim if t.head_dim is not None else hidden // num_heads
    moe = None
    if t.num_experts:
        moe_inter = t.moe_intermediate_size if t.moe_intermediate_size is not None else t.intermediate_size
        shared = t.n_shared_experts or 0
        shared_inter = t.shared_expert_intermediate_size or 0
        if shared and not shared_inter:
            shared_inter = shared * moe_inter
        elif shared_inter and not shared:
            shared = 1
        moe = Moe(
            num_experts=t.num_experts,
            num_experts_per_token=t.num_experts_per_tok or 1,
            expert_intermediate_size=moe_inter,
            num_shared_experts=shared,
            shared_expert_intermediate_size=shared_inter,
            num_dense_layers=t.first_k_dense_replace or 0,
        )
    mla = None
    if t.kv_lora_rank:
        mla = Mla(kv_lora_rank=t.kv_lora_rank, q_lora_rank=t.q_lora_rank, qk_nope_head_dim=t.qk_nope_head_dim,
                  qk_rope_head_dim=t.qk_rope_head_dim, v_head_dim=t.v_head_dim)
        head_dim = t.qk_nope_head_dim + t.qk_rope_head_dim
    kinds, window = _layer_kinds(t)
    act = t.hidden_act or "silu"
    dense_inter = t.intermediate_size or 0
    if moe is not None and moe.num_dense_layers == 0 and t.moe_intermediate_size is None:
        dense_inter = 0  # gpt-oss: intermediate_size is the expert width, every layer is MoE
    architectures = top.architectures or [top.model_type or "unknown"]
    tie = top.tie_word_embeddings if top.tie_word_embeddings is not None else bool(t.tie_word_embeddings)
    dtype = top.torch_dtype or t.torch_dtype or "bfloat16"
    try:
        return ModelArch(
            name=name,
            architecture=architectures[0],
            num_layers=num_layers,
            hidden_size=hidden,
            num_heads=num_heads,
            num_kv_heads=num_kv_heads,
            head_dim=head_dim,
            vocab_size=t.vocab_size,
            intermediate_size=dense_inter,
            gated_mlp=act in ("silu", "swiglu", "gelu_pytorch_tanh", "geglu") or "gelu" in act,
            tie_word_embeddings=tie,
            layer_kinds=kinds,
            sliding_window=window,
            max_position_embeddings=t.max_position_embeddings or DEFAULT_MAX_POSITIONS.get(top.model_type or "", 0),
            moe=moe,
            mla=mla,
            vision_params=_vision_params(top.vision_config, hidden),
            native_quantization=_quantization(top.quantization_config),
            torch_dtype=dtype,
        )
    except ValidationError as exc:
        raise ConfigError(f"{src}: unsupported config.json: {flatten_validation_error(exc)}") from None


def _catalog_files() -> dict[str, Any]:
    folder = importlib.resources.files("capacity.model_configs")
    return {model_configs.model_id(e.name[: -len(".json")]): e for e in folder.iterdir() if e.name.endswith(".json")}


def catalog_ids() -> list[str]:
    return sorted(_catalog_files())


def _config_file(id_or_path: str) -> tuple[str, Any]:
    """(name for messages, file) of a catalog id or a config.json path / model folder."""
    files = _catalog_files()
    lowered = {k.lower(): k for k in files}
    if id_or_path.lower() in lowered:
        key = lowered[id_or_path.lower()]
        return key, files[key]
    try:
        path = Path(id_or_path)
        if path.is_dir():
            path = path / "config.json"
        if path.is_file():
            return str(path), path
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        pass
    raise UnknownModelError(one_line(f"unknown model {id_or_path[:200]!r}{closest(id_or_path[:200], list(files))}; "
                                     "give a catalog id or a config.json path"))


@functools.cache
def load_config_dict(id_or_path: str) -> dict[str, Any]:
    source, entry = _config_file(id_or_path)
    try:
        if isinstance(entry, Path) and entry.stat().st_size > CONFIG_FILE_MAX_BYTES:
            raise ConfigError(f"{source}: larger than {CONFIG_FILE_MAX_BYTES // 2**20} MiB; no config.json is that big")
        text = entry.read_text(encoding="utf-8-sig")  # a byte-order mark is harmless: skip it
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(one_line(f"{source}: cannot read: {exc}")) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(one_line(f"{source}: not valid JSON: {exc.msg} at line {exc.lineno}")) from None
    except RecursionError:
        raise ConfigError(f"{source}: not a config.json: JSON nested too deeply") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise ConfigError(one_line(f"{source}: not a config.json: {exc}")) from None


@functools.cache
def load_model(id_or_path: str) -> ModelArch:
    """A catalog id (``meta-llama/Llama-3.1-8B``) or a path to a config.json / model folder."""
    data = load_config_dict(id_or_path)
    name = id_or_path if not id_or_path.endswith(".json") else Path(id_or_path).parent.name or id_or_path
    return parse_config(data, name=name, source=_config_file(id_or_path)[0])
