"""Which supported Kubernetes releases kubernetes-validate has a schema for: emitted objects are
validated strictly against every one it has.  It stops at its own version (1.37.0 ships schemas up
to 1.37), so the newest supported release, 1.38, is checked only once a kubernetes-validate with its
schema is installed; until then the tests that would check it skip, saying so."""

from __future__ import annotations

import kubernetes_validate

from kubectl_gpu.dra.facts import SUPPORTED_KUBERNETES_MINORS

_NEWEST_SCHEMA_MINOR = int(kubernetes_validate.latest_version().split(".")[1])
VALIDATED_MINORS = tuple(m for m in SUPPORTED_KUBERNETES_MINORS if m <= _NEWEST_SCHEMA_MINOR)
UNVALIDATED_MINORS = tuple(m for m in SUPPORTED_KUBERNETES_MINORS if m > _NEWEST_SCHEMA_MINOR)
NO_SCHEMA = (f"kubernetes-validate {kubernetes_validate.latest_version()} has no schema for Kubernetes "
             "1.{minor}: its objects are validated once a release of it ships one")
