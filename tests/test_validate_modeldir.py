"""Model folders for dummy weights: catalog lookup, special ids, and an offline whole-vocabulary tokenizer."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from validate.errors import ModelDirError
from validate.modeldir import config_info, describe, prepare_model_dir, resolve_config

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "assets" / "tiny-llama"


def test_catalog_ids_in_both_spellings():
    assert resolve_config("Qwen/Qwen3-8B")[1].name == "Qwen--Qwen3-8B.json"
    assert resolve_config("Qwen--Qwen3-8B")[0] == "Qwen/Qwen3-8B"


def test_folder_and_config_path():
    assert resolve_config(str(TINY)) == ("tiny-llama", TINY / "config.json")
    assert resolve_config(str(TINY / "config.json"))[1] == TINY / "config.json"


def test_unknown_model():
    with pytest.raises(ModelDirError, match="did you mean: Qwen/Qwen3-14B"):
        resolve_config("Qwen3-14")


def test_gemma3_defaults_come_from_transformers():
    config = json.loads(resolve_config("google/gemma-3-27b-it")[1].read_text())
    vocab, roles, _ = describe(config)
    assert vocab == 262_208  # Gemma3TextConfig's default; the hub config leaves it out
    assert roles["bos_token_id"] == [2] and roles["eos_token_id"] == [1, 106] and roles["pad_token_id"] == [0]
    assert roles["image_token_index"] == [262_144]


def test_a_folder_with_a_tokenizer_is_used_as_is(tmp_path):
    info = prepare_model_dir(str(TINY), tmp_path / "unused")
    assert info.path == str(TINY) and not (tmp_path / "unused").exists()
    assert info.vocab_size == 32_000 and info.special_ids == [0, 1, 2]
    assert config_info(str(TINY)).config_sha256 == info.config_sha256


CHECK = """
import json, sys
from pathlib import Path
import numpy as np
from transformers import AutoTokenizer
from validate.modeldir import prepare_model_dir
out = Path(sys.argv[2])
info = prepare_model_dir(sys.argv[1], out)
tok = AutoTokenizer.from_pretrained(out)
ids = np.random.default_rng(0).integers(0, info.vocab_size, 2000).tolist()
ids = [i for i in ids if i not in info.special_ids]
assert tok(tok.decode(ids), add_special_tokens=False).input_ids == ids, "round trip"
print(json.dumps({"vocab": len(tok), "bos": tok.bos_token_id, "eos": tok.eos_token_id, "pad": tok.pad_token_id,
                  "specials": info.special_ids, "sha": info.config_sha256,
                  "generation": json.loads((out / "generation_config.json").read_text())}))
"""


@pytest.mark.parametrize("model, expected", [
    ("Qwen/Qwen3-8B", {"vocab": 151_936, "bos": 151_643, "eos": 151_645, "pad": None}),
    ("google/gemma-3-27b-it", {"vocab": 262_208, "bos": 2, "eos": 1, "pad": 0}),
])
def test_written_tokenizer_covers_the_vocabulary(vllm_python, tmp_path, model, expected):
    """Runs in the vLLM venv: it has tokenizers and transformers (this project's venv has neither)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([vllm_python, "-c", CHECK, model, str(tmp_path / "m")], capture_output=True, text=True,
                            env=env, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    facts = json.loads(result.stdout.strip().splitlines()[-1])
    assert {k: facts[k] for k in expected} == expected
    source = resolve_config(model)[1]
    assert (tmp_path / "m" / "config.json").read_bytes() == source.read_bytes()  # unedited (Gemma keeps vision)
    assert facts["sha"] == config_info(model).config_sha256
    assert (tmp_path / "m" / "preprocessor_config.json").exists() == model.startswith("google/gemma-3")


PROCESSOR = """
import json, sys
from pathlib import Path
from transformers import AutoProcessor
from validate.modeldir import prepare_model_dir
out = Path(sys.argv[2])
prepare_model_dir(sys.argv[1], out)
proc = AutoProcessor.from_pretrained(out)
tok = proc.tokenizer
vocab = tok.get_vocab()  # vLLM's Gemma 3 processor looks its newline tokens up by text
print(json.dumps({"processor": type(proc).__name__, "image_seq_length": proc.image_seq_length,
                  "boi": tok.convert_tokens_to_ids(tok.boi_token), "image": tok.image_token_id,
                  "newlines": [vocab["\\n" * k] for k in range(1, 5)]}))
"""


def test_gemma3_folder_has_the_processor_vllm_builds(vllm_python, tmp_path):
    """vLLM builds Gemma 3's multimodal processor even for text prompts: the folder must carry its files."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([vllm_python, "-c", PROCESSOR, "google/gemma-3-27b-it", str(tmp_path / "m")],
                            capture_output=True, text=True, env=env, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    facts = json.loads(result.stdout.strip().splitlines()[-1])
    assert facts == {"processor": "Gemma3Processor", "image_seq_length": 256, "boi": 255_999, "image": 262_144,
                     "newlines": [107, 108, 109, 110]}



def test_one_naming_rule_for_the_catalog_on_both_sides():
    """capacity/model_configs/__init__.py names the catalog's files; validate (which loads it by path, not importing
    the model) and capacity read the same ids from the same files, and a campaign's draft folder name maps back."""
    from capacity import model_configs
    from capacity.engines.flags import draft_model_id
    from capacity.model.architecture import catalog_ids as capacity_ids
    from validate.modeldir import catalog_file_stem, catalog_ids as validate_ids

    assert validate_ids() == capacity_ids() and "Qwen/Qwen3-8B" in validate_ids()
    for model_id in validate_ids():
        assert model_configs.model_id(catalog_file_stem(model_id)) == model_id
    assert draft_model_id(f"/tmp/models/{catalog_file_stem('Qwen/Qwen3-0.6B')}") == "Qwen/Qwen3-0.6B"
