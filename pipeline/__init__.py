"""sdc-pipeline: make, measure the risk of, and measure the utility of synthetic data at scale."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sdc-pipeline")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+local"
