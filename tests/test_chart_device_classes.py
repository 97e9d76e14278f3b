"""The chart's KEP-5004 DeviceClasses are the ones `kubectl gpu migrate --device-classes` emits."""

from __future__ import annotations

import pytest

from kubectl_gpu.cluster.device_classes import mig_device_class
from tests.test_chart_support import needs_helm, rendered, values_of

pytestmark = needs_helm


def test_chart_device_classes_equal_migrates() -> None:
    profiles = values_of("mig-device-classes.yaml")["deviceClasses"]["migProfiles"]
    classes = {d["metadata"]["name"]: d for d in rendered("mig-device-classes.yaml") if d["kind"] == "DeviceClass"}
    assert len(classes) == len(profiles)
    for profile in profiles:
        expected = mig_device_class(profile)
        assert classes[expected["metadata"]["name"]]["spec"] == expected["spec"]


def test_no_device_class_by_default() -> None:
    assert not [d for d in rendered(None) if d["kind"] == "DeviceClass"]


@pytest.mark.parametrize("profile", ["1g.10gb.me", "mig-1g.10gb", "1g"])
def test_a_profile_in_another_spelling_is_refused_by_the_schema(profile, tmp_path) -> None:
    from tests.test_chart_support import HelmError, template

    values = tmp_path / "values.yaml"
    values.write_text(f"deviceClasses: {{migProfiles: [{profile!r}]}}\n")
    with pytest.raises(HelmError) as err:
        template(None, None, "-f", str(values))
    assert "/deviceClasses/migProfiles/0" in err.value.stderr
