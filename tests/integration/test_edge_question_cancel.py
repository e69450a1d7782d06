"""A person asked a run's question with candidates (which Nordea?) can let it go.

Before, the session's every next sentence was read as that question's answer and refused
("the answer is none of the 2 candidates"): "cancel", or a new question ("qual o preço da
Vale?"), met the same refusal until the question expired (a day by default), in ``chat``, in
``ask --session`` and over the HTTP entry alike. Now "cancel" (or "cancela", "never mind",
"esquece") cancels that run, the refusal says so, and the next sentence is a new one. A
question that takes free text (the pipelines domain's hand-over) still gets "cancel" as its
answer: only a reply the run refuses is read as letting go."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FINANCE = REPO / "configs" / "examples" / "finance"


def _chat(folder: Path, lines: list[str]) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(XDG_CONFIG_HOME=str(folder / "xdg"), XDG_STATE_HOME=str(folder / "state"))
    done = subprocess.run([sys.executable, "-m", "ontoflow", "chat", "--domains", str(FINANCE), "--transport", "inproc"],
                          cwd=folder, input="".join(f"{line}\n" for line in lines), capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")


def test_cancel_lets_a_runs_question_go_and_the_next_sentence_is_new(tmp_path: Path) -> None:
    out = "\n".join(_chat(tmp_path, ["qual o preço da Nordea?", "qual o preço da Vale?", "Cancela!", "qual o preço da Vale?"]))
    assert out.count("Which one?") == 2, out  # asked, then asked again after the refusal
    assert "the answer is none of the 2 candidates" in out and "or say cancel" in out
    assert "Cancelled: the question is let go, and its run ended." in out
    assert out.rstrip().splitlines()[-1].startswith("Vale (VALE3.SA): 61.20 BRL"), out


def test_a_candidate_named_after_a_refusal_still_answers(tmp_path: Path) -> None:
    out = _chat(tmp_path, ["qual o preço da Nordea?", "the third", "a segunda"])
    assert "\n".join(out).rstrip().splitlines()[-1].startswith("Nordea (NDA-FI.HE): 9.84 EUR")
