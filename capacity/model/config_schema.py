"""The fields of a Hugging Face ``config.json`` the capacity model reads, checked where they enter.

Every value is checked for its type (a whole number is a JSON number without a fraction: no strings,
booleans, lists, objects, ``NaN`` or ``Infinity``) and for a range. ``null`` counts as absent, as in
transformers. Sizes past what any real model has are refused rather than computed; the limits are
about 10× (or more) beyond the largest released checkpoints (Llama 3.1 405B: 126 layers, hidden 16,384;
Gemma 3: vocabulary 262,208; DeepSeek-V3: 256 experts; Llama 4 Scout: 10M tokens of context):

=========================================  ==============
layers (text and vision)                    1 … 1,000
hidden size                                 1 … 1,000,000
attention and KV heads                      1 … 65,536
head dimension, MLA ranks and head dims     1 … 65,536
vocabulary                                  1 … 10,000,000
MLP and expert widths                       0 … 10,000,000
experts (routed or shared)                  0 … 100,000
context length and sliding window           1 … 100,000,000
image side, patch side (vision tower)       1 … 100,000
config.json file size                       16 MiB
=========================================  ==============

Errors come out as one line: ``path: field: expected …, got …`` (a field read from ``text_config``
is named ``text_config.field``).
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from capacity.errors import ConfigError, one_line, show_value

LAYERS_MAX = 1_000
HIDDEN_MAX = 1_000_000
HEADS_MAX = 65_536
HEAD_DIM_MAX = 65_536
VOCAB_MAX = 10_000_000
WIDTH_MAX = 10_000_000
EXPERTS_MAX = 100_000
CONTEXT_MAX = 100_000_000
IMAGE_MAX = 100_000
CONFIG_FILE_MAX_BYTES = 16 * 2**20
TEXT_MAX_CHARS = 200


def _refuse(expected: str, value: Any) -> PydanticCustomError:
    return PydanticCustomError("config_value", "expected {expected}, got {got}",
                               {"expected": expected, "got": show_value(value)})


def _count(lo: int, hi: int) -> Any:
    """A whole number from lo to hi (an integral float such as 4096.0 is taken as 4096)."""
    expected = f"a positive integer up to {hi:,}" if lo == 1 else f"an integer from {lo} to {hi:,}"

    def check(given: Any) -> int:
        if isinstance(given, bool) or not isinstance(given, (int, float)):
            raise _refuse(expected, given)
        if isinstance(given, float) and not (math.isfinite(given) and given.is_integer()):
            raise _refuse(expected, given)
        v = int(given)
        if not lo <= v <= hi:
            raise _refuse(expected, given)
        return v

    return Annotated[int, BeforeValidator(check)]


def _text(v: Any) -> str:
    if not isinstance(v, str) or len(v) > TEXT_MAX_CHARS:
        raise _refuse(f"a string of at most {TEXT_MAX_CHARS} characters", v)
    return v


def _flag(v: Any) -> bool:
    if not isinstance(v, bool):
        raise _refuse("true or false", v)
    return v


def _texts(v: Any) -> list[str]:
    if not isinstance(v, list) or len(v) > LAYERS_MAX or not all(isinstance(x, str) and len(x) <= TEXT_MAX_CHARS for x in v):
        raise _refuse(f"a list of at most {LAYERS_MAX:,} strings", v)
    return v


def _object(v: Any) -> Any:
    if not isinstance(v, dict):
        raise _refuse("an object", v)
    return {k: x for k, x in v.items() if x is not None}


Text = Annotated[str, BeforeValidator(_text)]
Flag = Annotated[bool, BeforeValidator(_flag)]
Texts = Annotated[list[str], BeforeValidator(_texts)]


def _alias(*names: str) -> Any:
    return Field(None, validation_alias=AliasChoices(*names))


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class QuantizationConfig(_Strict):
    quant_method: Text | None = None
    fmt: Text | None = None


class VisionConfig(_Strict):
    """A ViT-style vision tower (transformers' SiglipVisionConfig defaults for what is left out)."""

    hidden_size: _count(0, HIDDEN_MAX) = 0
    intermediate_size: _count(0, WIDTH_MAX) | None = None
    num_hidden_layers: _count(0, LAYERS_MAX) = 0
    patch_size: _count(1, IMAGE_MAX) = 14
    num_channels: _count(1, 1_000) = 3
    image_size: _count(1, IMAGE_MAX) = 224


class TopConfig(_Strict):
    """What is read from the top level only (the rest is read from the merged text config)."""

    architectures: Texts | None = None
    model_type: Text | None = None
    text_config: Annotated[dict, BeforeValidator(_object)] | None = None
    vision_config: Annotated[VisionConfig, BeforeValidator(_object)] | None = None
    quantization_config: Annotated[QuantizationConfig, BeforeValidator(_object)] | None = None
    tie_word_embeddings: Flag | None = None
    torch_dtype: Text | None = _alias("torch_dtype", "dtype")


class TextConfig(_Strict):
    """The language model's fields; aliases are the names different model families use."""

    num_hidden_layers: _count(1, LAYERS_MAX)
    hidden_size: _count(1, HIDDEN_MAX)
    num_attention_heads: _count(1, HEADS_MAX)
    vocab_size: _count(1, VOCAB_MAX)
    num_key_value_heads: _count(1, HEADS_MAX) | None = _alias("num_key_value_heads", "num_kv_heads")
    head_dim: _count(1, HEAD_DIM_MAX) | None = None
    intermediate_size: _count(0, WIDTH_MAX) | None = None
    max_position_embeddings: _count(1, CONTEXT_MAX) | None = None
    hidden_act: Text | None = _alias("hidden_act", "hidden_activation")
    tie_word_embeddings: Flag | None = None
    torch_dtype: Text | None = None
    model_type: Text | None = None
    # MoE
    num_experts: _count(0, EXPERTS_MAX) | None = _alias("n_routed_experts", "num_experts", "num_local_experts")
    num_experts_per_tok: _count(1, EXPERTS_MAX) | None = _alias("num_experts_per_tok", "experts_per_token", "moe_topk")
    moe_intermediate_size: _count(1, WIDTH_MAX) | None = None
    n_shared_experts: _count(0, EXPERTS_MAX) | None = None
    shared_expert_intermediate_size: _count(0, WIDTH_MAX) | None = None
    first_k_dense_replace: _count(0, LAYERS_MAX) | None = None
    # MLA (DeepSeek): present when kv_lora_rank is a positive number
    kv_lora_rank: _count(0, HEAD_DIM_MAX) | None = None
    q_lora_rank: _count(0, HEAD_DIM_MAX) | None = None
    qk_nope_head_dim: _count(0, HEAD_DIM_MAX) | None = None
    qk_rope_head_dim: _count(1, HEAD_DIM_MAX) | None = None
    v_head_dim: _count(1, HEAD_DIM_MAX) | None = None
    # sliding-window attention
    sliding_window: _count(1, CONTEXT_MAX) | None = None
    use_sliding_window: Flag | None = None
    sliding_window_pattern: _count(1, LAYERS_MAX) | None = None
    max_window_layers: _count(0, 1_000_000) | None = None
    layer_types: Texts | None = None


def _first_error(exc: ValidationError, source: str, text_keys: frozenset[str] = frozenset()) -> ConfigError:
    err = exc.errors(include_url=False)[0]
    loc = [str(x) for x in err.get("loc", ())]
    if loc and loc[0] in text_keys:
        loc.insert(0, "text_config")
    where = ".".join(loc) or "config"
    if err.get("type") == "missing":
        return ConfigError(f"{source}: {where}: config.json lacks required field {loc[-1]!r}")
    msg = err["msg"] if err.get("type") == "config_value" else f"{err['msg']}, got {show_value(err.get('input'))}"
    return ConfigError(one_line(f"{source}: {where}: {msg}"))


def read_top(cfg: Any, source: str) -> TopConfig:
    if not isinstance(cfg, dict):
        raise ConfigError(f"{source}: config.json must be a JSON object, got {show_value(cfg)}")
    try:
        return TopConfig.model_validate({k: v for k, v in cfg.items() if v is not None})
    except ValidationError as exc:
        raise _first_error(exc, source) from None


def read_text(text: dict[str, Any], source: str, text_keys: frozenset[str]) -> TextConfig:
    try:
        t = TextConfig.model_validate({k: v for k, v in text.items() if v is not None})
    except ValidationError as exc:
        raise _first_error(exc, source, text_keys) from None
    _check_consistency(t, source, text_keys)
    return t


def _check_consistency(t: TextConfig, source: str, text_keys: frozenset[str]) -> None:
    """Rules between fields: an impossible combination is refused rather than computed."""

    def fail(field: str, msg: str) -> None:
        where = f"text_config.{field}" if field in text_keys else field
        raise ConfigError(one_line(f"{source}: {where}: {msg}"))

    heads = t.num_attention_heads
    if t.num_key_value_heads is not None and t.num_key_value_heads > heads:
        fail("num_key_value_heads", f"expected at most num_attention_heads ({heads:,}), got {t.num_key_value_heads:,}")
    mla = bool(t.kv_lora_rank)
    if not mla and t.head_dim is None and t.hidden_size // heads < 1:
        fail("head_dim", f"absent, and hidden_size ({t.hidden_size:,}) / num_attention_heads ({heads:,}) "
                         "leaves less than one dimension per head")
    if mla:
        for field in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            if getattr(t, field) is None:
                fail(field, f"an MLA config (kv_lora_rank {t.kv_lora_rank}) lacks required field {field!r}")
    if t.num_experts:
        k = t.num_experts_per_tok or 1
        if k > t.num_experts:
            fail("num_experts_per_tok", f"expected at most the number of experts ({t.num_experts:,}), got {k:,}")
        if t.moe_intermediate_size is None and not t.intermediate_size:
            fail("moe_intermediate_size", "unsupported MoE config: it lacks the expert width "
                                          "(moe_intermediate_size or a positive intermediate_size)")
        if (t.first_k_dense_replace or 0) > t.num_hidden_layers:
            fail("first_k_dense_replace", f"expected at most num_hidden_layers ({t.num_hidden_layers:,}), "
                                          f"got {t.first_k_dense_replace:,}")
    dense_layers = t.num_hidden_layers if not t.num_experts else (t.first_k_dense_replace or 0)
    if dense_layers and not t.intermediate_size:
        what = "a dense model" if not t.num_experts else f"{dense_layers:,} dense layers (first_k_dense_replace)"
        fail("intermediate_size", f"{what} needs the MLP width: expected a positive intermediate_size, "
                                  f"got {show_value(t.intermediate_size) if t.intermediate_size is not None else 'none'}")
    if t.layer_types is not None and len(t.layer_types) == t.num_hidden_layers and t.sliding_window is None \
            and any("sliding" in x for x in t.layer_types):
        fail("sliding_window", "layer_types names sliding-window layers but the config gives no sliding_window")
