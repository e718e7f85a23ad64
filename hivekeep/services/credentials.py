"""The credential check every write to the archive or a profile passes (SPEC 4.1, issue 37).

The policy is the agent's own (``agent.configure(secrets=...)``) else the hive's
(``HIVEKEEP_SECRETS``). It runs in the services, under every interface, so no path (a tool, the
maintenance call, an import, an adapter) writes around it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hivekeep.core.credentials import SecretsPolicy, describe, find_credentials, redact
from hivekeep.errors import NotFound, ValidationError
from hivekeep.store.base import Store


class CredentialRefused(ValidationError):
    """A write carried a credential and the policy is ``refuse``: nothing was written."""


Policy = SecretsPolicy | Callable[[], SecretsPolicy]  # a callable: read only when needed


@dataclass(frozen=True)
class Screened:
    """A text after the policy: ``redacted`` names the kind of each credential replaced."""

    text: str
    redacted: tuple[str, ...] = ()


def automatic(policy: SecretsPolicy) -> SecretsPolicy:
    """The policy for a write the model made on its own (the maintenance call, consolidation, a
    profile rewrite): ``refuse`` redacts there, since no one reads the refusal and a batch that
    fails for it would be retried in vain; the credential still never lands."""
    return SecretsPolicy.REDACT if policy is SecretsPolicy.REFUSE else policy


class CredentialGuard:
    def __init__(self, store: Store, policy: str) -> None:
        self.store = store
        self.default = SecretsPolicy(policy)

    def policy(self, agent_id: int) -> SecretsPolicy:
        """The agent's policy, else the hive's (a memory of a deleted author has no agent)."""
        try:
            own = self.store.get_agent_settings(agent_id).secrets
        except NotFound:
            return self.default
        return self.default if own is None else SecretsPolicy(own)

    def screen(self, text: str, policy: Policy, field: str = "content") -> Screened:
        """``text`` as the policy keeps it; raises CredentialRefused under ``refuse``. A callable
        ``policy`` is asked only when the text holds a credential (most never do: no read)."""
        found = find_credentials(text)
        if not found:
            return Screened(text)
        chosen = policy if isinstance(policy, SecretsPolicy) else policy()
        if chosen is SecretsPolicy.ALLOW:
            return Screened(text)
        if chosen is SecretsPolicy.REFUSE:
            raise CredentialRefused(
                f"The {field} holds a credential ({describe(found)}), and this hive refuses "
                "credentials (HIVEKEEP_SECRETS=refuse): nothing was written. Keep the secret in "
                "a secret manager and remember where to find it, not the secret itself.",
                field=field,
            )
        return Screened(redact(text, found), tuple(c.kind for c in found))

    def screen_optional(self, text: str | None, policy: Policy, field: str) -> Screened | None:
        return None if text is None else self.screen(text, policy, field)
