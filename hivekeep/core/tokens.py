"""Token counting with a real BPE (cl100k_base) that works offline.

tiktoken normally downloads its vocabulary on first use, which fails without a network. hivekeep
ships the vocabulary file inside the package and hands it to tiktoken with its published sha256, so
a corrupted or swapped file is refused instead of silently miscounting.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import tiktoken
from tiktoken.load import load_tiktoken_bpe

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"""
    r"""\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


@cache
def encoding() -> tiktoken.Encoding:
    """The cl100k_base encoding, loaded once from the bundled, hash-checked vocabulary."""
    path = resources.files("hivekeep") / "data" / "cl100k_base.tiktoken"
    with resources.as_file(path) as file:
        ranks = load_tiktoken_bpe(str(file), expected_hash=CL100K_SHA256)
    return tiktoken.Encoding(
        name="cl100k_base",
        pat_str=_CL100K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=_CL100K_SPECIAL,
    )


def count_tokens(text: str) -> int:
    """Number of cl100k_base tokens in ``text`` (special-token strings count as plain text)."""
    return len(encoding().encode(text, disallowed_special=()))
