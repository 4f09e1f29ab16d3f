"""The packed simulator state of ``simulation.expert_state`` (pure numpy, milliseconds)."""

from __future__ import annotations

import numpy as np
import pytest

from rlinf.envs.libero import expert_state
from rlinf.envs.libero.expert_state import MAX_OBJECTS, STATE_DIM, name_code, object_names, pack, unpack

RAW = {
    "robot0_eef_pos": np.array([-0.04, 0.0, 0.70]),
    "robot0_eef_quat": np.array([1.0, 0.0, 0.0, 0.0]),
    "robot0_joint_pos": np.zeros(7),
    "alphabet_soup_1_pos": np.array([-0.1, -0.15, 0.475]),
    "alphabet_soup_1_quat": np.array([0.0, 0.707, 0.707, 0.0]),
    "alphabet_soup_1_to_robot0_eef_pos": np.ones(3),
    "basket_1_pos": np.array([0.0, 0.27, 0.432]),
    "basket_1_quat": np.array([0.0, 0.0, 0.0, 1.0]),
    "milk_1_pos": np.array([0.1, 0.2, 0.45]),
    "milk_1_quat": np.array([0.0, 0.0, 0.0, 1.0]),
}


def test_objects_are_the_posed_ones_sorted_robot_and_relative_poses_excluded() -> None:
    assert object_names(RAW) == ["alphabet_soup_1", "basket_1", "milk_1"]


def test_unpack_gives_back_what_the_expert_reads_naming_the_known_objects() -> None:
    view = unpack(pack(RAW, env_id=17, elapsed=40), names=["alphabet_soup_1", "basket_1"])
    assert (view.env_id, view.elapsed) == (17, 40)
    for key in (
        "robot0_eef_pos",
        "robot0_eef_quat",
        "alphabet_soup_1_pos",
        "alphabet_soup_1_quat",
        "basket_1_pos",
    ):
        np.testing.assert_allclose(view.raw_obs[key], RAW[key])
    unknown = [key for key in view.raw_obs if key.startswith("object")]
    assert unknown == ["object2_pos", "object2_quat"], "the milk carton, slot 2, by its slot"
    np.testing.assert_allclose(view.raw_obs["object2_pos"], RAW["milk_1_pos"])


def test_every_value_survives_a_float32_cast() -> None:
    state = pack(RAW, env_id=1023, elapsed=399)
    assert state.shape == (STATE_DIM,)
    view = unpack(state.astype(np.float32), names=["milk_1"])
    assert (view.env_id, view.elapsed) == (1023, 399)
    np.testing.assert_allclose(view.raw_obs["milk_1_pos"], RAW["milk_1_pos"], atol=1e-6)
    assert name_code("milk_1") < 2**24 and name_code("milk_1") == float(np.float32(name_code("milk_1")))


def test_a_scene_with_more_objects_than_slots_is_refused() -> None:
    crowded = dict(RAW)
    for k in range(MAX_OBJECTS):
        crowded[f"cup_{k}_pos"], crowded[f"cup_{k}_quat"] = np.zeros(3), np.zeros(4)
    with pytest.raises(ValueError, match=f"objects with a pose; the layout holds {MAX_OBJECTS}"):
        pack(crowded, 0, 0)


def test_a_vector_of_another_shape_says_how_to_get_one() -> None:
    with pytest.raises(ValueError, match=r"is simulation\.expert_state on in the env config"):
        unpack(np.zeros(8), names=[])


def test_name_codes_never_collide_with_the_empty_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(expert_state.zlib, "crc32", lambda data: 1 << expert_state.NAME_BITS)
    assert name_code("anything") == 1
