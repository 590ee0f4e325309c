"""Local infrastructure that is real, not mocked: a SeaweedFS serving S3 and an Iceberg REST catalog."""

from sbcrawl_dev.infra.seaweedfs import (
    SeaweedFS,
    SeaweedFSError,
    find_weed_binary,
    run_until_interrupted,
)

__all__ = ["SeaweedFS", "SeaweedFSError", "find_weed_binary", "run_until_interrupted"]
