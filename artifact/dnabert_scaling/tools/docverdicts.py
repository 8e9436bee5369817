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


def forecast_verdicts(facts: Facts, _: str | None) -> str:
    """What the artifact's own forecast (``predict`` with its defaults on each shipped set that can be
    forecast, held against ``expected/claims.toml`` as the report does) says of each claim at the
    study's world sizes above one: per claim, the forecast verdicts with the number of sets, and for a
    claim forecast FAIL, the band of its deciding figure at the largest world size against the bound.
    A forecast, never a verdict (``checker.predicted``)."""
    from dnabert_scaling import checker
    from dnabert_scaling.checker.predicted import predicted_verdicts
    from dnabert_scaling.report.front import study_setup

    forecasts = {name: p for name, p in facts.predictions.items() if "refused" not in p}
    if not forecasts:
        return "no shipped set can be forecast"
    claims = checker.load_claims(facts.root / "expected" / "claims.toml")
    study = study_setup()["world_sizes"]
    by_claim: dict[str, dict[str, int]] = {}
    fail_rows: dict[str, list[dict]] = {}
    for p in forecasts.values():
        for c in predicted_verdicts(p, claims, study):
            by_claim.setdefault(c["id"], {})
            by_claim[c["id"]][c["verdict"]] = by_claim[c["id"]].get(c["verdict"], 0) + 1
            fail_rows.setdefault(c["id"], []).extend(r for r in c["checks"] if r["verdict"] == "FAIL")
    parts = []
    for cid, counts in by_claim.items():
        said = ", ".join(f"{v} in {n} of {len(forecasts)}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        rows = fail_rows.get(cid) or []
        if rows:
            top = max(r["world_size"] for r in rows)
            at_top = [r for r in rows if r["world_size"] == top]
            ends = [x for r in at_top for x in (r["band"].get("low"), r["band"].get("high")) if isinstance(x, (int, float))]
            if ends:
                said += (
                    f" (`{at_top[0]['figure']}` at {top} GPUs {min(ends):.3f}-{max(ends):.3f}, bound {at_top[0]['bounds_text']})"
                )
        parts.append(f"{cid}: {said}")
    return "; ".join(parts)
