"""Writes a Hugging Face tokenizer folder from a GGUF model file's own vocabulary: a peer's tokenizer, offline.

AIPerf (the peer load generator of docs/benchmarks.md § LLM) counts and builds prompts with a
Hugging Face tokenizer, which it would fetch from the model hub. The GGUF file the server runs
carries the same vocabulary (`tokenizer.ggml.tokens`, `.merges`, the chat template), so this
rebuilds `tokenizer.json` from it with the `tokenizers` library: byte-level BPE as GPT-2 and
SmolLM2 use. Run with the peer's interpreter (it needs `gguf` and `tokenizers`, not archkit):

    /work/venvs/aiperf/bin/python bench/llm_peer/gguf_tokenizer.py MODEL.gguf OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gguf import GGUFReader
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers


def strings(r: GGUFReader, name: str) -> list[str]:
    f = r.fields[name]
    return [bytes(f.parts[i]).decode("utf-8") for i in f.data]


def scalar(r: GGUFReader, name: str) -> int | bool | None:
    f = r.fields.get(name)
    return None if f is None else f.parts[f.data[0]].tolist()[0]


def main(model: str, out: str) -> None:
    r = GGUFReader(model)
    if strings(r, "tokenizer.ggml.model") != ["gpt2"]:
        sys.exit(f"{model}: only byte-level BPE (tokenizer.ggml.model gpt2) is rebuilt here")
    tokens = strings(r, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in strings(r, "tokenizer.ggml.merges")]
    types = r.fields["tokenizer.ggml.token_type"]
    control = [tokens[i] for i, d in enumerate(types.data) if types.parts[d].tolist()[0] == 3]  # CONTROL
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    bos, eos = scalar(r, "tokenizer.ggml.bos_token_id"), scalar(r, "tokenizer.ggml.eos_token_id")
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": tokens[int(bos)] if bos is not None else None,
        "eos_token": tokens[int(eos)] if eos is not None else None,
        "model_max_length": 8192,
        "chat_template": strings(r, "tokenizer.chat_template")[0]
        if "tokenizer.chat_template" in r.fields
        else None,
        "clean_up_tokenization_spaces": False,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    print(f"{folder}: {len(tokens)} tokens, {len(merges)} merges, {len(control)} control tokens")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
