"""The model catalog: one Hugging Face config.json per model, its file named after the model id with the owner's
slash written as `--` (`Qwen/Qwen3-8B` is `Qwen--Qwen3-8B.json`). This module is the one place that naming rule is
written; it imports nothing, so `validate` (which must not import the model) loads it by path."""

SEPARATOR = "--"


def file_stem(model_id: str) -> str:
    """The catalog file's name (without .json) for a model id: `Qwen/Qwen3-8B` -> `Qwen--Qwen3-8B`."""
    return model_id.replace("/", SEPARATOR, 1)


def model_id(stem: str) -> str:
    """The model id of a catalog file name (without .json), or of a folder named like one."""
    return stem.replace(SEPARATOR, "/", 1)
