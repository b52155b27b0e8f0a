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

from pydantic import BaseModel, ConfigDict, Field

from capacity.errors import ConfigError, UnknownModelError, closest

AttentionKind = Literal["full", "sliding"]


class Moe(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    num_experts: int = Field(gt=0)
    num_experts_per_token: int = Field(gt=0)
    expert_intermediate_size: int = Field(gt=0)
    num_shared_experts: int = Field(default=0, ge=0)
    shared_expert_intermediate_size: int = Field(default=0, ge=0)
    num_dense_layers: int = Field(default=0, ge=0, description="leading layers with a dense MLP (DeepSeek)")


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

    @property
    def num_sliding_layers(self) -> int:
        return sum(k == "sliding" for k in self.layer_kinds)

    @property
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


def _first(cfg: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for k in keys:
        if cfg.get(k) is not None:
            return cfg[k]
    return default


def _layer_kinds(cfg: dict[str, Any], num_layers: int) -> tuple[tuple[AttentionKind, ...], int | None]:
    window = cfg.get("sliding_window")
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) == num_layers:
        kinds = tuple("sliding" if "sliding" in str(t) else "full" for t in types)
        return kinds, (window if "sliding" in kinds else None)
    if not window or cfg.get("use_sliding_window") is False:
        return ("full",) * num_layers, None
    pattern = cfg.get("sliding_window_pattern")
    if isinstance(pattern, int) and pattern > 1:  # Gemma 3: every pattern-th layer is global
        kinds = tuple("full" if (i + 1) % pattern == 0 else "sliding" for i in range(num_layers))
        return kinds, window
    max_window_layers = cfg.get("max_window_layers")
    if cfg.get("use_sliding_window") and isinstance(max_window_layers, int):  # Qwen2-style
        kinds = tuple("sliding" if i >= max_window_layers else "full" for i in range(num_layers))
        return kinds, window if "sliding" in kinds else None
    if window >= cfg.get("max_position_embeddings", 0) > 0:
        return ("full",) * num_layers, None
    return ("sliding",) * num_layers, window  # Mistral 7B v0.1: every layer windowed


def _vision_params(vision: dict[str, Any] | None, text_hidden: int) -> int:
    """ViT encoder: per layer 4·d² (attention) + 2·d·f (MLP); plus patch embedding and a projector."""
    if not vision:
        return 0
    d = vision.get("hidden_size", 0)
    f = vision.get("intermediate_size", 4 * d)
    layers = vision.get("num_hidden_layers", 0)
    patch = vision.get("patch_size", 14)
    channels = vision.get("num_channels", 3)
    image = vision.get("image_size", 224)
    positions = (image // patch) ** 2 if patch else 0
    encoder = layers * (4 * d * d + 2 * d * f)
    embed = channels * patch * patch * d + positions * d
    projector = d * text_hidden
    return int(encoder + embed + projector)


def _quantization(cfg: dict[str, Any]) -> str | None:
    q = cfg.get("quantization_config")
    if not isinstance(q, dict):
        return None
    method = str(q.get("quant_method", "")).lower()
    if method == "mxfp4":
        return "mxfp4"
    if method == "fp8" or q.get("fmt") == "e4m3":
        return "fp8"
    if method in ("awq", "gptq"):
        return "int4"
    return method or None


# transformers' defaults for fields some shipped configs leave out (Gemma 3's text_config)
MODEL_TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {"vocab_size": 262208, "sliding_window_pattern": 6, "hidden_activation": "gelu_pytorch_tanh",
                    "tie_word_embeddings": True},
}


def parse_config(cfg: dict[str, Any], name: str = "custom") -> ModelArch:
    """Turn a config.json dict into a ModelArch; raises ConfigError naming what is missing."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"{name}: config.json must be a JSON object")
    text = cfg
    if isinstance(cfg.get("text_config"), dict):
        text = {**{k: v for k, v in cfg.items() if k not in ("text_config", "vision_config")}, **cfg["text_config"]}
    text = {**MODEL_TYPE_DEFAULTS.get(str(text.get("model_type")), {}), **text}
    try:
        num_layers = int(text["num_hidden_layers"])
        hidden = int(text["hidden_size"])
        num_heads = int(text["num_attention_heads"])
        vocab = int(text["vocab_size"])
    except KeyError as exc:
        raise ConfigError(f"{name}: config.json lacks required field {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name}: config.json has a non-integer size field ({exc})") from None
    num_kv_heads = int(_first(text, "num_key_value_heads", "num_kv_heads", default=num_heads))
    head_dim = int(_first(text, "head_dim", default=hidden // num_heads))
    num_experts = _first(text, "n_routed_experts", "num_experts", "num_local_experts")
    moe = None
    if num_experts:
        moe_inter = _first(text, "moe_intermediate_size", "intermediate_size")
        shared = int(_first(text, "n_shared_experts", default=0) or 0)
        shared_inter = int(_first(text, "shared_expert_intermediate_size", default=0) or 0)
        if shared and not shared_inter:
            shared_inter = shared * int(moe_inter)
        elif shared_inter and not shared:
            shared = 1
        moe = Moe(
            num_experts=int(num_experts),
            num_experts_per_token=int(_first(text, "num_experts_per_tok", "experts_per_token", "moe_topk", default=1)),
            expert_intermediate_size=int(moe_inter),
            num_shared_experts=shared,
            shared_expert_intermediate_size=shared_inter,
            num_dense_layers=int(_first(text, "first_k_dense_replace", default=0) or 0),
        )
    mla = None
    if text.get("kv_lora_rank"):
        mla = Mla(
            kv_lora_rank=int(text["kv_lora_rank"]),
            q_lora_rank=text.get("q_lora_rank"),
            qk_nope_head_dim=int(text["qk_nope_head_dim"]),
            qk_rope_head_dim=int(text["qk_rope_head_dim"]),
            v_head_dim=int(text["v_head_dim"]),
        )
        head_dim = int(text["qk_nope_head_dim"]) + int(text["qk_rope_head_dim"])
    kinds, window = _layer_kinds(text, num_layers)
    act = str(_first(text, "hidden_act", "hidden_activation", default="silu"))
    dense_inter = int(_first(text, "intermediate_size", default=0) or 0)
    if moe is not None and moe.num_dense_layers == 0 and "moe_intermediate_size" not in text:
        dense_inter = 0  # gpt-oss: intermediate_size is the expert width, every layer is MoE
    architectures = cfg.get("architectures") or [str(cfg.get("model_type", "unknown"))]
    try:
        return ModelArch(
            name=name,
            architecture=str(architectures[0]),
            num_layers=num_layers,
            hidden_size=hidden,
            num_heads=num_heads,
            num_kv_heads=num_kv_heads,
            head_dim=head_dim,
            vocab_size=vocab,
            intermediate_size=dense_inter,
            gated_mlp=act in ("silu", "swiglu", "gelu_pytorch_tanh", "geglu") or "gelu" in act,
            tie_word_embeddings=bool(_first(cfg, "tie_word_embeddings", default=text.get("tie_word_embeddings", False))),
            layer_kinds=kinds,
            sliding_window=window,
            max_position_embeddings=int(_first(text, "max_position_embeddings", default=0)
                                        or DEFAULT_MAX_POSITIONS.get(str(cfg.get("model_type")), 0)),
            moe=moe,
            mla=mla,
            vision_params=_vision_params(cfg.get("vision_config"), hidden),
            native_quantization=_quantization(cfg),
            torch_dtype=str(_first(cfg, "torch_dtype", "dtype", default=text.get("torch_dtype", "bfloat16"))),
        )
    except ValueError as exc:
        raise ConfigError(f"{name}: unsupported config.json: {exc}") from None


def _catalog_files() -> dict[str, Any]:
    folder = importlib.resources.files("capacity.model_configs")
    return {e.name[: -len(".json")].replace("--", "/"): e for e in folder.iterdir() if e.name.endswith(".json")}


def catalog_ids() -> list[str]:
    return sorted(_catalog_files())


@functools.cache
def load_config_dict(id_or_path: str) -> dict[str, Any]:
    files = _catalog_files()
    lowered = {k.lower(): k for k in files}
    if id_or_path.lower() in lowered:
        text = files[lowered[id_or_path.lower()]].read_text()
        return json.loads(text)
    path = Path(id_or_path)
    if path.is_dir():
        path = path / "config.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from None
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}") from None
        return data
    raise UnknownModelError(f"unknown model '{id_or_path}'{closest(id_or_path, list(files))}; give a catalog id or a config.json path")


@functools.cache
def load_model(id_or_path: str) -> ModelArch:
    """A catalog id (``meta-llama/Llama-3.1-8B``) or a path to a config.json / model folder."""
    data = load_config_dict(id_or_path)
    name = id_or_path if not id_or_path.endswith(".json") else Path(id_or_path).parent.name or id_or_path
    return parse_config(data, name=name)
