"""What the machine check's modules share: the settings more than one of them reads, and its one error."""

# The manual's step 1.3 image; any CUDA base image works (override with --cuda-image).
DEFAULT_CUDA_IMAGE = "nvidia/cuda:10.0-base"
GPU_ROLES = (None, "worker")  # no --role: checked as a worker


class EnvCheckError(Exception):
    """A one-line user-facing failure (bad option, unwritable output)."""
