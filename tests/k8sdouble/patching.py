"""The PATCH content types Kubernetes accepts, applied to plain dicts."""
from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from .errors import ApiError

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: null deletes, objects merge recursively, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# Strategic merge: the double has no Go struct tags, so list merge keys come from the field name.
# These are the patchMergeKey tags of the core/apps/batch/resource types tests touch; any other
# list is replaced, as JSON merge patch would.
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
    "env": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath", "ports": "containerPort",
    "resourceClaims": "name", "resourceClaimStatuses": "name", "imagePullSecrets": "name",
    "conditions": "type", "addresses": "type", "ownerReferences": "uid", "hostAliases": "ip",
    "containerStatuses": "name", "initContainerStatuses": "name", "topologySpreadConstraints": "topologyKey",
}
# Lists of scalars that strategic merge treats as sets.
MERGED_SETS = {"finalizers"}


def strategic_merge_patch(target: Any, patch: Any, field: str = "") -> Any:
    if isinstance(patch, dict):
        if patch.get("$patch") == "replace":
            return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
        if patch.get("$patch") == "delete":
            return None
        result = dict(target) if isinstance(target, dict) else {}
        for key, value in patch.items():
            if key.startswith("$"):
                continue  # $retainKeys, $setElementOrder/...: ordering hints the double does not need
            if value is None:
                result.pop(key, None)
            else:
                merged = strategic_merge_patch(result.get(key), value, key)
                if merged is None:
                    result.pop(key, None)
                else:
                    result[key] = merged
        return result
    if isinstance(patch, list) and isinstance(target, list):
        if field in MERGED_SETS:
            return target + [v for v in patch if v not in target]
        merge_key = MERGE_KEYS.get(field)
        if merge_key and all(isinstance(v, dict) for v in patch + target):
            result = list(target)
            for item in patch:
                index = next((i for i, t in enumerate(result) if t.get(merge_key) == item.get(merge_key)), None)
                if item.get("$patch") == "delete":
                    if index is not None:
                        result.pop(index)
                elif index is None:
                    result.append(strategic_merge_patch({}, item))
                else:
                    result[index] = strategic_merge_patch(result[index], item)
            return result
    return copy.deepcopy(patch)


def apply_patch(obj: dict, content_type: str, patch: Any) -> dict:
    media = content_type.split(";")[0].strip().lower()
    if media in (MERGE, STRATEGIC):
        if not isinstance(patch, dict):
            raise ApiError(400, f"a {media} body must be a JSON object")
        return merge_patch(obj, patch) if media == MERGE else strategic_merge_patch(obj, patch)
    if media == JSON_PATCH:
        if not isinstance(patch, list):
            raise ApiError(400, "a json-patch body must be a JSON array of operations")
        try:
            return jsonpatch.apply_patch(obj, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError) as e:
            raise ApiError(422, f"the server rejected our request due to an error in our request: {e}")
    raise ApiError(415, f"the body of the request was in an unknown format - accepted media types include: "
                        f"{JSON_PATCH}, {MERGE}, {STRATEGIC}")
