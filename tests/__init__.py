"""The test suite: a package, so that `tests.util` and the fixture modules beside it are imported as
`tests.*` in every import mode, ahead of any other top-level `tests` package installed."""
