"""The BERTRAM model: its config, inputs, network, the frozen encoder it reads,
its files on disk and the thinc layer that holds it in a pipeline.
"""
