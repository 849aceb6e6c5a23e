"""Facts the phase-2 steps build on: read from the packet, bucket mapping by plain arithmetic."""

from __future__ import annotations

import numpy as np

from packets.examples import example_names, example_path
from packets.load import load_packet
from workbench.core.facts import baseline_facts, mapping_facts, shape_mapping


def test_shape_mapping_pads_to_the_smallest_bucket_and_falls_back_above_all() -> None:
    mapping = shape_mapping([100, 512, 600, 5000], [0.4, 0.3, 0.2, 0.1], [512, 1024, 4096])
    assert mapping.compiled_shape.tolist() == [512, 512, 1024, 5000]
    assert mapping.fallback.tolist() == [False, False, False, True]
    np.testing.assert_allclose(mapping.padding, [1 - 100 / 512, 0.0, 1 - 600 / 1024, 0.0])
    assert mapping.fallback_share == 0.1


def test_facts_for_every_example_are_text_rows() -> None:
    for name in example_names():
        packet = load_packet(example_path(name)).packet
        for facts in (baseline_facts, mapping_facts):
            rows = facts(packet)
            assert rows and all(r.label and r.value for r in rows), (name, facts.__name__)
