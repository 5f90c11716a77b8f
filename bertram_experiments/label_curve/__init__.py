"""Learning curves over labelled data: stock and with-bertram pipelines trained on growing,
nested subsets of real (unrarified) training texts, scored on the same test texts."""
