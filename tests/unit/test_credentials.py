"""The credential finder: every documented shape caught, ordinary identifiers left alone."""

from __future__ import annotations

import pytest

from hivekeep.core.credentials import describe, find_credentials, marker, redact

# one of each shape, as each provider documents it (fake values of the right form)
CAUGHT = {
    "AWS access key": "AKIAIOSFODNN7EXAMPLE",
    "GitHub token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "GitHub fine-grained": "github_pat_11ABCDEFG0abcdefghijkl_"
    + "mnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ01",
    "GitLab token": "glpat-xxxxxxxxxxxxxxxxxxxx",
    "Slack token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "Slack webhook": "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "OpenAI legacy": "sk-abcdefghijklmnopqrstT3BlbkFJabcdefghijklmnopqrst",
    "OpenAI project": "sk-proj-" + "Ab1Cd2Ef3Gh4" * 10,
    "Anthropic": "sk-ant-api03-" + "aB3_dE6-gH9" * 8 + "AA",
    "Google API key": "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "Google OAuth": "ya29.a0AfH6SMBx3bcDEfGhIjKlMnOpQrStUvWxYz",
    "Stripe live": "sk_live_51H8abcdefghijklmnopqrstuvwx123",
    "Stripe test": "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    "Stripe restricted": "rk_live_abcdefghijklmnopqrstuvwx",
    "SendGrid": "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",
    "Hugging Face": "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
    "npm": "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "PyPI": "pypi-AgEIcHlwaS5vcmc" + "A" * 70,
    "Twilio": "SK0123456789abcdef0123456789abcdef",
    "Telegram": "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
    "Discord": "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhIjKl.abcdefghijklmnopqrstuvwxyz0",
    "Azure storage": "AccountKey=" + "a" * 86 + "==",
    "JWT": (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9l"
        "IiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    ),
    "private key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----",
    "RSA private key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n"
    "-----END RSA PRIVATE KEY-----",
    "Visa": "4111 1111 1111 1111",
    "Mastercard": "5500-0000-0000-0004",
    "Amex": "378282246310005",
    "password in a URL": "postgres://admin:s3cr3tpw@db.example.com/prod",
}

# ordinary identifiers that look like machine strings: none is a credential
LEFT_ALONE = [
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed the race",
    "short sha 9fceb02 and tag v2.31.4-rc1",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "order number 1234567890123456 shipped on Monday",
    "order #4111111111111112 (fails the Luhn check)",
    "flight BA283 leaves at 10:45 from gate A12",
    "version 2.31.4, build 20240611.3",
    "see https://example.com/path?q=1&page=2 and http://user@example.com/",
    "call +1 415 555 2671 or 020 7946 0958",
    "ISBN 978-3-16-148410-0",
    "the password is hunter2",  # said in words: no shape to know it by
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "UPS tracking 1Z999AA10123456784",
    "IBAN DE89370400440532013000",
    "epoch 1717171717171 and 1717171717",
    "ticket JIRA-12345, PR #8812, issue gh-771",
    "MAC 00:1B:44:11:3A:B7, IP 192.168.1.20",
    "the ski-resort-booking-confirmation-number-abcdefghijklmnop",
    "task-abcdefghijklmnopqrstuvwxyz012345 in the queue",
    "price 1,234,567,890,123.45 dollars",
    "Base64 aGVsbG8gd29ybGQgaGVsbG8gd29ybGQ=",
    "the key is in 1Password under 'staging'",
    "ASIN B08N5WRWNW and SKU AB-1234-XYZ",
    '{"id":4836859485564911616,"ids":[4111111111111111]}',  # JSON numbers: ids, not cards
    "tweet https://x.com/a/status/4111111111111111 and order #4111111111111111",
]


@pytest.mark.parametrize("name", list(CAUGHT))
def test_each_documented_shape_is_caught_and_redacted(name: str) -> None:
    secret = CAUGHT[name]
    text = f"Note for later: {secret} (from the setup call)"
    found = find_credentials(text)
    assert found, name
    redacted = redact(text)
    assert secret not in redacted
    # the secret's longest run of word characters is gone, not just its first part
    assert max(secret.replace("-", " ").replace("_", " ").split(), key=len) not in redacted
    assert redacted.startswith("Note for later: ")
    assert redacted.endswith(" (from the setup call)")
    assert find_credentials(redacted) == []  # a marker is never a credential itself


@pytest.mark.parametrize("text", LEFT_ALONE)
def test_ordinary_identifiers_are_left_alone(text: str) -> None:
    assert find_credentials(text) == []
    assert redact(text) == text


def test_a_url_keeps_everything_but_its_password() -> None:
    text = "db at postgres://admin:s3cr3tpw@db.example.com/prod"
    assert redact(text) == "db at postgres://admin:[redacted URL password]@db.example.com/prod"


def test_several_credentials_each_get_their_marker() -> None:
    text = "aws AKIAIOSFODNN7EXAMPLE and gh ghp_abcdefghijklmnopqrstuvwxyz0123456789 done"
    found = find_credentials(text)
    assert [c.kind for c in found] == ["AWS access key", "GitHub token"]
    assert redact(text) == (f"aws {marker('AWS access key')} and gh {marker('GitHub token')} done")
    assert describe(found) == "AWS access key, GitHub token"


def test_a_token_longer_than_its_pattern_is_redacted_whole() -> None:
    key = "sk_live_" + "x" * 99  # Stripe's live keys are longer than the 24 the pattern needs
    assert redact(f"key {key} end") == "key [redacted Stripe access key] end"


def test_an_unterminated_private_key_is_redacted_to_the_end() -> None:
    text = "here: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
    assert redact(text) == "here: [redacted private key]"
