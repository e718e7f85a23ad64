"""Credentials in text: find them, and redact them, before a write makes them durable.

A memory can be shared with every agent and exported, so a key written once spreads. This module
finds machine credentials in their documented shapes and replaces each with a marker naming its
kind. The shapes come from Yelp's detect-secrets (its regex detectors, used for their patterns
only: nothing is verified and nothing leaves the machine), completed with a few shapes it lacks
(Anthropic, Google, newer OpenAI and GitHub keys, Stripe test keys, Hugging Face, private key
blocks, payment card numbers by the Luhn check). Entropy and keyword detectors are left out on
purpose: they flag commit hashes, UUIDs and prose ("the password is …"), and a credential said in
words is not a shape any detector can know. See docs/guarantees.md, "Credentials".
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any


class SecretsPolicy(StrEnum):
    """What a write does with a credential it carries (``HIVEKEEP_SECRETS``)."""

    REDACT = "redact"  # the credential becomes a marker naming its kind; the rest is kept
    REFUSE = "refuse"  # the write is refused with a clear error; nothing is written
    ALLOW = "allow"  # stored as written


@dataclass(frozen=True)
class Credential:
    """One credential found in a text: its kind and where it lies (``text[start:end]``)."""

    kind: str
    start: int
    end: int


# detect-secrets' regex detectors used, by class name (module, class); the others either need a
# keyword around the value (IBM, Cloudant, SoftLayer: they match ordinary prose) or flag
# ordinary identifiers (Artifactory's pattern matches upper-case words of ten letters)
_DETECTORS = (
    ("aws", "AWSKeyDetector"),
    ("azure_storage_key", "AzureStorageKeyDetector"),
    ("basic_auth", "BasicAuthDetector"),
    ("discord", "DiscordBotTokenDetector"),
    ("github_token", "GitHubTokenDetector"),
    ("gitlab_token", "GitLabTokenDetector"),
    ("jwt", "JwtTokenDetector"),
    ("mailchimp", "MailchimpDetector"),
    ("openai", "OpenAIDetector"),
    ("pypi_token", "PypiTokenDetector"),
    ("sendgrid", "SendGridDetector"),
    ("slack", "SlackDetector"),
    ("square_oauth", "SquareOAuthDetector"),
    ("stripe", "StripeDetector"),
    ("telegram_token", "TelegramBotTokenDetector"),
    ("twilio", "TwilioKeyDetector"),
)

# shapes detect-secrets does not know (documented by each provider)
_OWN: tuple[tuple[str, str], ...] = (
    ("Anthropic API key", r"sk-ant-[a-z]{2,10}\d{2}-[A-Za-z0-9_-]{20,}"),
    ("OpenAI API key", r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}"),
    ("OpenAI API key", r"sk-[A-Za-z0-9]{48}"),
    ("Google API key", r"AIza[0-9A-Za-z_-]{35}"),
    ("Google OAuth token", r"ya29\.[0-9A-Za-z_-]{20,}"),
    ("GitHub token", r"github_pat_[A-Za-z0-9_]{22,}"),
    ("Stripe access key", r"(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{16,}"),
    ("Stripe webhook secret", r"whsec_[A-Za-z0-9]{24,}"),
    ("Hugging Face token", r"hf_[A-Za-z0-9]{30,}"),
    ("npm token", r"npm_[A-Za-z0-9]{36}"),  # detect-secrets' runs to the end of the line
    ("age secret key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
)

_PRIVATE_KEY = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END \1-----|\Z)"
    r"|PuTTY-User-Key-File-\d+:.*?(?:Private-MAC: [0-9a-f]+|\Z)",
    re.DOTALL,
)
# 13 to 19 digits, single spaces or dashes between groups, not inside a longer run of digits,
# nor a bare number of structured text (right after ":" "[" "=" as in JSON, or "#" "/"): an id
_CARD = re.compile(r"(?<![\d.,:\[=#/-])\d(?:[ -]?\d){12,18}(?![\d-]|[.,]\d)")
# issuer prefixes of the card networks (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay)
_CARD_PREFIX = re.compile(
    r"4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|6011|64[4-9]|65|35|3[0689]|62"
)
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_-]*")  # a match ends where the token does
_WORD = re.compile(r"[A-Za-z0-9]")


def marker(kind: str) -> str:
    """What a redacted credential becomes in the text (it matches no detector itself)."""
    return f"[redacted {kind}]"


def find_credentials(text: str) -> list[Credential]:
    """The credentials in ``text``, in order, overlapping finds merged (the earliest kind named)."""
    found = sorted(_finds(text), key=lambda c: (c.start, -c.end))
    merged: list[Credential] = []
    for credential in found:
        if merged and credential.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Credential(last.kind, last.start, max(last.end, credential.end))
        else:
            merged.append(credential)
    return merged


def redact(text: str, credentials: list[Credential] | None = None) -> str:
    """``text`` with each credential replaced by its marker."""
    found = find_credentials(text) if credentials is None else credentials
    parts: list[str] = []
    at = 0
    for credential in found:
        parts += [text[at : credential.start], marker(credential.kind)]
        at = credential.end
    return "".join([*parts, text[at:]])


def describe(credentials: list[Credential]) -> str:
    """'a GitHub token and 2 card numbers' style summary, for answers and errors."""
    counts: dict[str, int] = {}
    for credential in credentials:
        counts[credential.kind] = counts.get(credential.kind, 0) + 1
    named = [kind if n == 1 else f"{n} {kind}s" for kind, n in counts.items()]
    return ", ".join(named)


def _finds(text: str) -> Iterator[Credential]:
    for kind, pattern, validate in _patterns():
        for match in pattern.finditer(text):
            start, end = match.span(1) if match.re.groups and match.group(1) else match.span()
            if start > 0 and _WORD.match(text[start - 1]) and _WORD.match(text[start]):
                continue  # inside a longer word: not a token of this shape
            if validate is not None and not validate(text[start:end]):
                continue
            end = _TOKEN_TAIL.match(text, end).end()  # type: ignore[union-attr]
            yield Credential(kind, start, end)
    for match in _PRIVATE_KEY.finditer(text):
        yield Credential("private key", match.start(), match.end())
    for match in _CARD.finditer(text):
        digits = re.sub(r"[ -]", "", match.group())
        if _CARD_PREFIX.match(digits) and _luhn(digits):
            yield Credential("card number", match.start(), match.end())


@cache
def _patterns() -> tuple[tuple[str, re.Pattern[str], Any], ...]:
    """Every (kind, pattern, validator) pair, detect-secrets' loaded on first use (it is slow to
    import, and most processes never write)."""
    import importlib

    patterns: list[tuple[str, re.Pattern[str], Any]] = []
    for module_name, class_name in _DETECTORS:
        module = importlib.import_module(f"detect_secrets.plugins.{module_name}")
        detector = getattr(module, class_name)()
        validate = getattr(detector, "is_formally_valid", None)  # JWT: the parts must decode
        kind = _kind(detector.secret_type)
        patterns += [(kind, pattern, validate) for pattern in detector.denylist]
    patterns += [(kind, re.compile(pattern), None) for kind, pattern in _OWN]
    return tuple(patterns)


_RENAMED = {
    "Basic Auth Credentials": "URL password",
    "JSON Web Token": "JWT",
}


def _kind(secret_type: str) -> str:
    """detect-secrets' names, worded as the rest of our markers ('AWS Access Key' → 'AWS
    access key')."""
    if secret_type in _RENAMED:
        return _RENAMED[secret_type]
    first, *rest = secret_type.split()
    return " ".join([first, *(w if w.isupper() else w.lower() for w in rest)])


def _luhn(digits: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(digits)):
        n = int(char) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0
