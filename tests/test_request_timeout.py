"""--request-timeout reads as kubectl reads it (client-go clientcmd.ParseTimeout): whole seconds
(strconv.ParseInt) or a Go duration; 0 waits forever; anything else is refused with what to write."""

from __future__ import annotations

import pytest

from kubectl_gpu.k8s.options import parse_request_timeout


@pytest.mark.parametrize(("text", "seconds"), [
    ("0", 0.0), ("90", 90.0), (" 30 ", 30.0), ("+7", 7.0), ("30s", 30.0), ("1m30s", 90.0), ("0s", 0.0),
    ("9223372036", 9223372036.0),  # the largest whole second a Duration of nanoseconds holds
])
def test_whole_seconds_and_durations_are_taken(text: str, seconds: float) -> None:
    assert parse_request_timeout(text) == seconds


@pytest.mark.parametrize("text", ["1.5", "1e3", "nan", "inf", "", "s", "9223372037", "2562048h"])
def test_what_kubectl_refuses_is_refused_with_the_forms_to_write(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration; use seconds or a unit"):
        parse_request_timeout(text)


@pytest.mark.parametrize("text", ["-5", "-1s"])
def test_a_negative_timeout_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is negative; use 0 to wait forever"):
        parse_request_timeout(text)
