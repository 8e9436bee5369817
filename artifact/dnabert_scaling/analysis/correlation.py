"""Which host launch enqueued which GPU activity, by the CUPTI correlation id both carry (Kineto traces;
Score-P traces in ``SCOREP_CUDA_DRIVER_CALLBACKS=records`` mode): the one pairing that completeness
(:mod:`completeness`) and phase attribution (:mod:`attribution`) both use, so that they never disagree
about a trace.

- **Classes.** A launch pairs only with activities of its own class: a kernel launch (``cuLaunchKernel*``,
  ``cudaLaunchKernel*``, graph launches) with kernels, a copy or memset call with copies and memsets. An id
  that only a launch of the other class carries finds nothing: a kernel is not "found" by a copy.
- **One launch, several activities.** An id is its launch's own. Every activity of the launch's class that
  carries it pairs with that launch (a graph launch enqueues several kernels under one id).
- **Repeated ids.** Where several launches of one class carry the same id (damaged or forged ids: CUPTI
  numbers every call once), the activities with it pair with those launches one to one, both in time order;
  activities beyond them pair with none. The ids are counted (``repeated_ids``) for a note.
- **When ids are used** (:func:`uses_correlation`): some launch and some activity carry one. Launches that
  carry none are counted apart (``launches_without_id``): no id can show their activity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dnabert_scaling.traces.classify import activity_classes, launch_classes


def uses_correlation(gpu: pd.DataFrame, launches: pd.DataFrame) -> bool:
    """Whether launches and activities are paired by correlation id: some launch and some activity carry one."""
    return bool(len(launches) and launches["correlation"].notna().any() and gpu["correlation"].notna().any())


@dataclass
class Pairing:
    """The pairing of one rank's launches (rows of the ``launches`` frame given, by position) with its GPU
    activities (rows of ``gpu``, by position)."""

    launch_of: np.ndarray  # per activity: the position of its launch in ``launches``, -1 where none
    activity_has_id: np.ndarray  # per activity: whether it carries an id
    found: np.ndarray  # per launch: whether an activity pairs with it
    has_id: np.ndarray  # per launch: whether it carries an id
    repeated_ids: int  # ids that more than one launch of one class carries
    foreign: int  # activities whose id only launches of the other class carry

    @property
    def launches_without_id(self) -> int:
        return int((~self.has_id).sum())

    @property
    def unpaired_with_id(self) -> np.ndarray:
        """Per activity: it carries an id, and no launch of its class pairs with it."""
        return self.activity_has_id & (self.launch_of < 0)


def pair(gpu: pd.DataFrame, launches: pd.DataFrame) -> Pairing:
    """Pair ``launches`` (host launch rows) with ``gpu`` (GPU activity rows) by correlation id and class (see
    the module docstring)."""
    lid = launches["correlation"].to_numpy(dtype=np.int64, na_value=-1)
    gid = gpu["correlation"].to_numpy(dtype=np.int64, na_value=-1)
    l_has, g_has = lid >= 0, gid >= 0
    lcls, gcls = launch_classes(launches["name"]), activity_classes(gpu["kind"])
    L = pd.DataFrame({"id": lid, "cls": lcls, "t": launches["start_ns"].to_numpy(np.int64), "pos": np.arange(len(lid))})
    L = L[l_has & pd.notna(lcls)].sort_values(["id", "cls", "t", "pos"], kind="stable")
    L["nth"] = L.groupby(["id", "cls"], sort=False).cumcount()
    many = L.groupby(["id", "cls"], sort=False)["pos"].transform("size")
    repeated = int(L.loc[many > 1, ["id", "cls"]].drop_duplicates().shape[0])
    A = pd.DataFrame({"id": gid, "cls": gcls, "t": gpu["start_ns"].to_numpy(np.int64), "row": np.arange(len(gid))})
    A = A[g_has & pd.notna(gcls)].sort_values(["id", "cls", "t", "row"], kind="stable")
    A["nth"] = A.groupby(["id", "cls"], sort=False).cumcount()
    counts = L.groupby(["id", "cls"], sort=False).size().rename("m").reset_index()
    A = A.merge(counts, on=["id", "cls"], how="left")
    A["key"] = np.where(A["m"].fillna(0).to_numpy() == 1, 0, A["nth"].to_numpy())
    A = A.merge(L[["id", "cls", "nth", "pos"]].rename(columns={"nth": "key"}), on=["id", "cls", "key"], how="left")
    launch_of = np.full(len(gid), -1, dtype=np.int64)
    hit = A["pos"].notna().to_numpy()
    launch_of[A["row"].to_numpy()[hit]] = A["pos"].to_numpy()[hit].astype(np.int64)
    found = np.zeros(len(lid), dtype=bool)
    found[launch_of[launch_of >= 0]] = True
    ids_by_class = {c: set(L.loc[L["cls"] == c, "id"].tolist()) for c in ("kernel", "copy")}
    foreign = sum(
        1
        for i, c in zip(gid[g_has & (launch_of < 0)].tolist(), gcls[g_has & (launch_of < 0)].tolist())
        if c is not None and any(i in ids for other, ids in ids_by_class.items() if other != c)
    )
    return Pairing(launch_of, g_has, found, l_has, repeated, foreign)


def pairing_notes(p: Pairing) -> list[str]:
    """What a reader of the analysis should know about a pairing's ids (nothing where they were sound)."""
    notes = []
    if p.repeated_ids:
        notes.append(
            f"{p.repeated_ids} correlation id(s) carried by more than one launch of a class (CUPTI numbers every call "
            "once: damaged or forged ids): their activities paired with those launches one to one in time order"
        )
    if p.foreign:
        notes.append(
            f"{p.foreign} GPU activit{'y carries' if p.foreign == 1 else 'ies carry'} the correlation id of a launch of "
            "the other class only (a kernel with a copy call's id, or a copy with a kernel launch's): paired with no launch"
        )
    if p.launches_without_id and p.has_id.any():
        notes.append(f"{p.launches_without_id} launch(es) carry no correlation id: no activity can be shown to be theirs")
    return notes
