"""The one sentence the documents say about the shipped verdicts as a whole: which claims any shipped
set judged on measurements (PASS or FAIL), and which stand NOT RUN or INVALID everywhere
(``make docs``, block ``judged-claims``)."""

from __future__ import annotations

from dnabert_scaling.tools.docfacts import Facts

JUDGED = ("PASS", "FAIL")


def judged_claims(facts: Facts, _: str | None) -> str:
    verdicts = [(cid, v) for s in facts.sets for cid, v in s.claim_verdicts().items()]
    judged = sorted({cid for cid, v in verdicts if v in JUDGED})
    rest = sorted({cid for cid, _ in verdicts} - set(judged))
    kinds = sorted({v for cid, v in verdicts if cid in rest})
    if not verdicts:
        return "no shipped set has verdicts"
    said = f"{', '.join(judged) or 'no claim'} {'is' if len(judged) == 1 else 'are'} judged on measurements (PASS or FAIL)"
    return said + (f"; {', '.join(rest)} stand {' or '.join(kinds)} in every shipped set" if rest else " in the shipped sets")
