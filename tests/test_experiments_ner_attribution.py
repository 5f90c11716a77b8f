"""The listener's gradient: captured from the layer's backprop, undone afterwards, placed on rare tokens."""

from __future__ import annotations

import numpy as np
import pytest
from thinc.api import Model, chain, with_array, Relu

from bertram_experiments.ner.attribution import capture_output_gradients, listener_output


def test_the_gradient_of_each_docs_output_is_kept_and_the_layer_restored():
    layer = with_array(Relu(3, 2))
    layer.initialize(X=[np.zeros((2, 2), dtype="f")])
    captured = []
    undo = capture_output_gradients(layer, captured)
    X = [np.ones((2, 2), dtype="f"), np.ones((4, 2), dtype="f")]
    _, backprop = layer.begin_update(X)
    dY = [np.full((2, 3), 0.5, dtype="f"), np.full((4, 3), 2.0, dtype="f")]
    backprop(dY)
    assert [c.shape for c in captured] == [(2, 3), (4, 3)] and np.allclose(captured[1], 2.0)
    undo()
    _, backprop = layer.begin_update(X)
    backprop(dY)
    assert len(captured) == 2  # the layer's own forward again


def test_a_tok2vec_without_a_transformer_listener_is_named():
    with pytest.raises(ValueError, match="reads no transformer listener"):
        listener_output(chain(Relu(2, 2), Relu(2, 2)))
    assert isinstance(listener_output(Model("transformer-listener>>trfs2arrays", lambda m, X, t: (X, None))), Model)
