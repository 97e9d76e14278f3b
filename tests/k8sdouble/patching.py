"""The PATCH content types Kubernetes accepts, applied to plain dicts."""
from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from .errors import ApiError

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
# The double has no Go struct tags to know list merge keys, so strategic merge is JSON merge:
# lists are replaced, not merged. Good enough for metadata/label/status patches.
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


def apply_patch(obj: dict, content_type: str, patch: Any) -> dict:
    media = content_type.split(";")[0].strip().lower()
    if media in (MERGE, STRATEGIC):
        if not isinstance(patch, dict):
            raise ApiError(400, f"a {media} body must be a JSON object")
        return merge_patch(obj, patch)
    if media == JSON_PATCH:
        if not isinstance(patch, list):
            raise ApiError(400, "a json-patch body must be a JSON array of operations")
        try:
            return jsonpatch.apply_patch(obj, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError) as e:
            raise ApiError(422, f"the server rejected our request due to an error in our request: {e}")
    if media == APPLY:
        raise ApiError(415, "server-side apply is not supported by the test double; "
                            "use a merge, strategic-merge or json patch")
    raise ApiError(415, f"the body of the request was in an unknown format - accepted media types include: "
                        f"{JSON_PATCH}, {MERGE}, {STRATEGIC}")
