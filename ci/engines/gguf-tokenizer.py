#!/usr/bin/env python3
"""Write a Hugging Face tokenizer.json for a GGUF model's byte-level BPE vocabulary.

The engine suite uses it to test `bench run --tokenizer FILE` against llama-server with the
model's own vocabulary and merges (SmolLM2 ships as a GGUF only). Reads just the GGUF metadata
(format v2/v3), in plain Python: no numpy, no model hub. Only `tokenizer.ggml.model = "gpt2"`
(byte-level BPE) is supported; anything else exits 2 with the reason.

usage: gguf-tokenizer.py MODEL.gguf OUT.json
"""
import json
import struct
import sys

SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def read_metadata(path):
    with open(path, "rb") as f:
        def take(fmt):
            size = struct.calcsize(fmt)
            return struct.unpack(fmt, f.read(size))[0]

        def string():
            return f.read(take("<Q")).decode("utf-8", errors="replace")

        def value(kind):
            if kind == 8:
                return string()
            if kind == 9:
                elem, count = take("<I"), take("<Q")
                return [value(elem) for _ in range(count)]
            if kind in SCALARS:
                return take(SCALARS[kind])
            raise ValueError(f"unknown GGUF value type {kind}")

        if f.read(4) != b"GGUF":
            raise ValueError("not a GGUF file")
        version = take("<I")
        if version < 2:
            raise ValueError(f"GGUF version {version} is too old")
        take("<Q")  # tensor count
        kv = {}
        for _ in range(take("<Q")):
            key = string()
            kv[key] = value(take("<I"))
        return kv


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        kv = read_metadata(sys.argv[1])
    except (OSError, ValueError, struct.error) as e:
        print(f"{sys.argv[1]}: {e}", file=sys.stderr)
        return 2
    model = kv.get("tokenizer.ggml.model")
    if model != "gpt2":
        print(f"{sys.argv[1]}: tokenizer.ggml.model is {model!r}; only byte-level BPE (gpt2) is supported", file=sys.stderr)
        return 2
    tokens = kv["tokenizer.ggml.tokens"]
    types = kv.get("tokenizer.ggml.token_type", [1] * len(tokens))
    merges = kv.get("tokenizer.ggml.merges", [])
    # Control (3) and user-defined (4) tokens match whole, as HF's added tokens do.
    added = [
        {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": types[i] == 3}
        for i, t in enumerate(tokens) if types[i] in (3, 4)
    ]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        # Digits one by one, then GPT-2's byte-level split: SmolLM2's (and StarCoder's) pre-tokenizer.
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, byte_level]},
        "post_processor": None,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges},
    }
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        json.dump(tokenizer, out, ensure_ascii=False)
    print(f"{sys.argv[2]}: {len(tokens)} tokens, {len(merges)} merges, {len(added)} added "
          f"(pre-tokenizer in the GGUF: {kv.get('tokenizer.ggml.pre', '?')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
