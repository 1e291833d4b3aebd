"""Start-up only: import torch."""
import torch  # noqa: F401
