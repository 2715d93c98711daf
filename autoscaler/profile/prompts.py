"""Prompts of a given token count, different for every request (so a prefix cache cannot skip prefill).

A prompt is `n` words drawn at random from short, common English words: for the tokenizers of current
LLMs (Llama, Mistral, Qwen BPEs) each such word with its leading space is one token, so n words ≈ n
tokens. When the server has vLLM's `/tokenize`, the profiler measures the ratio once (tokens per word on
a sample) and scales the word count by it; either way the capacity figures use the token counts the
server reports in `usage`, not this estimate.
"""

from __future__ import annotations

import numpy as np

_WORD_TEXT = (
    "time year people way day man thing woman life child world school state family student group country "
    "problem hand part place case week company system program question work government number night point "
    "home water room mother area money story fact month lot right study book eye job word business issue "
    "side kind head house service friend father power hour game line end member law car city community "
    "name team minute idea body information back parent face others level office door health person art "
    "war history party result change morning reason research girl guy moment air teacher force education"
)
WORDS: tuple[str, ...] = tuple(_WORD_TEXT.split())
_VOCAB = np.array(WORDS)


def synth_prompt(tokens: int, rng: np.random.Generator, tokens_per_word: float = 1.0) -> str:
    words = max(1, round(tokens / max(tokens_per_word, 1e-3)))
    return " ".join(_VOCAB[rng.integers(len(_VOCAB), size=words)].tolist())
