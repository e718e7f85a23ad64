"""Loading the LoCoMo long-conversation benchmark for evidence-retrieval evaluation.

The data is read from the path given (by default ``../shared/data/locomo/locomo10_dev.json``) and
never copied into this repository: its licence (CC BY-NC 4.0) allows evaluation only.

Each dialogue turn becomes one document, ``"Speaker: text"`` plus ``" [shares a photo: caption]"``
when the turn carries an image caption, dated with its session's timestamp. Each question of
categories 1-4 with at least one valid evidence id is scorable; malformed ids are normalised and
ids that point at no turn are dropped (see the data's README, "Evidence pitfalls").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

DEFAULT_PATH = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / ("locomo10_dev.json")
)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_EVIDENCE_ID = re.compile(r"^D:?(\d+):0*(\d+)$")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str  # what is stored: "Speaker: text [shares a photo: ...]"
    when: datetime  # the session's date and time


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question]


def normalise_evidence(raw: list[str], known: set[str]) -> frozenset[str]:
    ids: set[str] = set()
    for item in raw:
        for part in re.split(r"[;,\s]+", str(item)):
            match = _EVIDENCE_ID.match(part.strip())
            if match:
                dia_id = f"D{match.group(1)}:{match.group(2)}"
                if dia_id in known:
                    ids.add(dia_id)
    return frozenset(ids)


def _turn_text(turn: dict[str, object]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    if caption:
        text += f" [shares a photo: {caption}]"
    return text


def load(path: Path = DEFAULT_PATH) -> list[Conversation]:
    samples = json.loads(Path(path).read_text())
    conversations = []
    for sample in samples:
        conv = sample["conversation"]
        turns: list[Turn] = []
        number = 1
        while f"session_{number}" in conv:
            when = datetime.strptime(conv[f"session_{number}_date_time"], "%I:%M %p on %d %B, %Y")
            turns += [
                Turn(t["dia_id"], t["speaker"], _turn_text(t), when)
                for t in conv[f"session_{number}"]
            ]
            number += 1
        known = {t.dia_id for t in turns}
        questions = []
        for qa in sample["qa"]:
            if qa["category"] not in CATEGORIES:
                continue
            evidence = normalise_evidence(qa.get("evidence", []), known)
            if evidence:
                questions.append(Question(qa["question"], qa["category"], evidence))
        conversations.append(
            Conversation(
                sample["sample_id"], (conv["speaker_a"], conv["speaker_b"]), turns, questions
            )
        )
    return conversations
