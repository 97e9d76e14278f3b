"""A GPU amount that is a template placeholder is not a quantity to fix but a manifest to render.

Real manifests migrate meets unrendered: envsubst-style `$GPU_PER_NODE` (ai-on-eks blueprints), kro's
`${schema.spec.gpus}` (kubernetes-sigs/kro ResourceGraphDefinition), Helm/Go `{{ .Values.gpu }}` and Argo's
`{{inputs.parameters.gpus}}`."""

from __future__ import annotations

import pytest

from kubectl_gpu.core import TranslateOptions, translate_pod_template


@pytest.mark.parametrize("value", ["$GPU_PER_NODE", "${GPU_COUNT}", "${schema.spec.gpus}", "{{ .Values.gpu }}",
                                   "{{inputs.parameters.gpus}}"])
def test_a_placeholder_is_an_error_that_says_to_render_first(value):
    template = {"metadata": {}, "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": value}}}]}}
    result = translate_pod_template(template, TranslateOptions())
    assert not result.patch
    (error,) = result.errors
    assert value in error.message and "render" in error.message


def test_a_value_that_is_merely_wrong_is_not_called_a_placeholder():
    template = {"metadata": {}, "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "two"}}}]}}
    (error,) = translate_pod_template(template, TranslateOptions()).errors
    assert "render" not in error.message and "not a quantity" in error.message
