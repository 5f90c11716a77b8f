"""A shim for tools that still call setup.py (older pip, some editable installs): the metadata is in pyproject.toml."""

from setuptools import setup

setup()
