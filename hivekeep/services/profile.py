"""Profile reads and edits, with the budget rule and compare-and-swap on the revision."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

from hivekeep.core import profile as doc
from hivekeep.core.credentials import SecretsPolicy
from hivekeep.core.text import clean_text
from hivekeep.core.tokens import count_tokens
from hivekeep.errors import ConflictError, NotFound
from hivekeep.events import EventBus
from hivekeep.services.credentials import CredentialGuard, automatic
from hivekeep.store.base import Change, ProfileRecord, ProfileVersion, Store
from hivekeep.types import Actor, Operation

BY_PERSON = Change(Actor.PERSON, Operation.SET)
DROPPED = "the profile was edited while the model was writing; the rewrite was dropped"


class ProfileService:
    def __init__(self, store: Store, budget: int, events: EventBus, guard: CredentialGuard) -> None:
        self.store = store
        self.budget = budget
        self.events = events
        self.guard = guard

    def _screened(self, agent_id: int, text: str, field: str) -> str:
        """``text`` as the agent's credential policy keeps it (CredentialRefused: refused)."""
        return self.guard.screen(text, partial(self.guard.policy, agent_id), field).text

    def _saved(self, profile: ProfileRecord, source: str) -> ProfileRecord:
        self.events.publish(
            "profile:updated",
            profile.agent_id,
            revision=profile.revision,
            tokens=profile.tokens,
            source=source,
        )
        return profile

    def get(self, agent_id: int) -> ProfileRecord:
        return self.store.get_profile(agent_id)

    def edit(
        self, agent_id: int, section: str, operation: str, content: str, pin: bool = False
    ) -> ProfileRecord:
        """Apply one edit_profile operation to the current text, atomically: the store reads,
        changes and writes in one transaction, so concurrent edits queue instead of conflicting
        (a lost compare-and-swap would otherwise mean retries, and under load, failures)."""

        content = clean_text(content, "content")  # control characters: see clean_text
        content = self._screened(agent_id, content, "content")

        unchanged = False

        def change(current: ProfileRecord) -> tuple[str, int]:
            nonlocal unchanged
            new_text = doc.apply_edit(current.text, section, operation, content, pin=pin)
            unchanged = new_text == current.text  # the store then writes nothing
            if unchanged:  # not even over budget: an edit that changes nothing is no harm
                return new_text, current.tokens
            return new_text, doc.check_edit_budget(
                current.text, new_text, self.budget, count_tokens
            )

        saved = self.store.modify_profile(
            agent_id, change, manual=True, written=Change(Actor.AGENT, Operation.EDIT)
        )
        if unchanged:
            return replace(saved, unchanged=True)
        return self._saved(saved, "edit_profile")

    def replace(
        self,
        agent_id: int,
        text: str,
        expected_revision: int | None = None,
        *,
        written: Change = BY_PERSON,
    ) -> ProfileRecord:
        """A user's whole-document edit (UI, API, CLI), under the same budget rule as the tool.

        With ``expected_revision`` the write fails with ConflictError if someone wrote meanwhile;
        without it, the current revision is used (last writer wins, but never a half write).
        """
        current = self.store.get_profile(agent_id)
        text = self._screened(agent_id, clean_text(text, "text"), "text")
        text = doc.serialise(doc.parse(text))
        tokens = doc.check_edit_budget(current.text, text, self.budget, count_tokens)
        revision = current.revision if expected_revision is None else expected_revision
        saved = self.store.save_profile(
            agent_id, text, tokens, expected_revision=revision, manual=True, written=written
        )
        return self._saved(saved, "user")

    def history(self, agent_id: int) -> list[ProfileVersion]:
        """Every kept version, newest first; the current one is first."""
        return self.store.profile_history(agent_id)

    def restore(self, agent_id: int, version: int, *, by: Actor = Actor.PERSON) -> ProfileRecord:
        """Make an older version's text current again, verbatim, as a new revision: history is
        never rewritten. The text is judged as an edit (the budget rule, its tokens counted
        anew): a stored version, imported ones included, is no proof that it fits now."""
        versions = self.store.profile_history(agent_id)
        target = next((v for v in versions if v.version == version), None)
        if target is None:
            kept = ", ".join(str(v.version) for v in versions)
            raise NotFound(
                f"The profile has no version {version}; the kept versions are {kept}. "
                "List them with `hivekeep history --agent NAME`."
            )
        current = versions[0]
        text = self._screened(agent_id, target.text, "text")  # a version may hold one
        tokens = doc.check_edit_budget(current.text, text, self.budget, count_tokens)
        saved = self.store.save_profile(
            agent_id,
            text,
            tokens,
            expected_revision=current.version,
            manual=True,
            written=Change(by, Operation.RESTORE),
        )
        return self._saved(saved, "restore")

    def rewrite(
        self, agent_id: int, candidate: str | None, expected_revision: int, source: str
    ) -> RewriteResult:
        """An automatic rewrite (maintenance, bootstrap, regenerate) through the guards.

        The write is a compare-and-swap against the revision the model was shown: if a user or a
        tool edited the profile while the model was thinking, the rewrite is dropped and their
        edit stands (re-running the model is the caller's choice, never an implicit extra call).
        """
        current = self.store.get_profile(agent_id)
        if current.revision != expected_revision:
            return RewriteResult(False, current, (DROPPED,), conflict=True)
        if candidate is not None:  # the model's own output: controls (NUL too) are dropped
            candidate = clean_text(candidate.replace("\x00", ""), "profile")

            def policy() -> SecretsPolicy:
                return automatic(self.guard.policy(agent_id))

            candidate = self.guard.screen(candidate, policy, "profile").text
        outcome = doc.guard_rewrite(current.text, candidate, self.budget, count_tokens)
        if not outcome.applied or outcome.text == current.text:
            return RewriteResult(False, current, outcome.notes or ("no change",))
        try:
            saved = self.store.save_profile(
                agent_id,
                outcome.text,
                count_tokens(outcome.text),
                expected_revision=expected_revision,
                manual=False,
                written=Change(
                    Actor.MAINTENANCE,
                    Operation.REWRITE if source == "maintenance" else Operation.REGENERATE,
                ),
            )
        except ConflictError:
            latest = self.store.get_profile(agent_id)
            return RewriteResult(False, latest, (DROPPED,), conflict=True)
        return RewriteResult(True, self._saved(saved, source), outcome.notes)


@dataclass(frozen=True)
class RewriteResult:
    updated: bool
    profile: ProfileRecord
    notes: tuple[str, ...]
    conflict: bool = False  # a user or tool wrote the profile while the model was thinking
