"""HTTP-level Kubernetes API double for tests: see README.md."""
from .double import K8sDouble
from .errors import ApiError
from .faults import TIMEOUT, Fault, RecordedRequest
from .kinds import KINDS, ResourceKind, UnknownResource

__all__ = ["K8sDouble", "ApiError", "TIMEOUT", "Fault", "RecordedRequest", "KINDS", "ResourceKind",
           "UnknownResource"]
