"""CPU ranks are pinned to the same thread count at every world size."""

import pytest
import torch

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.run.train.rank import pin_cpu_threads


@pytest.fixture(autouse=True)
def _restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("env, threads", [(None, 1), ("1", 1), ("2", 2)])
def test_threads_from_the_environment_else_one(monkeypatch, env, threads):
    if env is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", env)
    deviations = []
    assert pin_cpu_threads(deviations) == threads
    assert torch.get_num_threads() == threads
    # the same words with and without the variable (torchrun sets it only for several ranks)
    assert deviations == [f"CPU run: {threads} intra-op thread(s) per rank at every world size ($OMP_NUM_THREADS, else 1)"]


@pytest.mark.parametrize(
    "value, said", [("lots", "not a whole number"), ("0", "not a positive number"), ("-3", "not a positive number")]
)
def test_a_bad_thread_count_names_the_variable(monkeypatch, value, said):
    monkeypatch.setenv("OMP_NUM_THREADS", value)
    with pytest.raises(ArtifactError, match=f"OMP_NUM_THREADS='{value}' is {said}"):
        pin_cpu_threads([])
