"""util.redact: what a URL, a setting or an error's text may show of a credential (nothing)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resolver.util import redact
from resolver.util.errors import UsageError

SECRET = "s3cr3tTok"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("https://pypi.example.com/simple", "https://pypi.example.com/simple"),
        (f"https://bob:{SECRET}@art.example.com/pypi", "https://***@art.example.com/pypi"),
        (f"https://{SECRET}@git.example.com", "https://***@git.example.com"),
        (f"https://h/simple?token={SECRET}&x", "https://h/simple?token=***&***"),
        (f"https://h/x#{SECRET}", "https://h/x"),
        (f"bob:{SECRET}@harbor.example.com/dockerhub", "***@harbor.example.com/dockerhub"),
        ("https://h/x\nerror: forged", "https://h/x\\x0aerror: forged"),
    ],
)
def test_url_hides_userinfo_and_query_values(raw: str, shown: str) -> None:
    assert redact.url(raw) == shown


def test_userinfo_is_split_off_decoded() -> None:
    clean, auth = redact.split_userinfo("https://u%40corp:p%3Aw@h:8443/simple?x=1")
    assert clean == "https://h:8443/simple?x=1" and auth == ("u@corp", "p:w")
    assert redact.split_userinfo("https://h/a@b") == ("https://h/a@b", None)
    assert redact.without_credentials(f"https://u:{SECRET}@h/x?t={SECRET}") == "https://h/x"


def test_error_text_hides_urls_queries_and_known_secrets() -> None:
    token = f"ghp_{SECRET}\r\nX-Evil: 1"
    text = (
        f"InvalidHeader: bad header value: {('Bearer ' + token)!r}; "
        f"Max retries exceeded with url: /x?token={SECRET} (http://bob:{SECRET}@h/)"
    )
    shown = redact.text(text, [f"Bearer {token}", token])
    assert SECRET not in shown and "\n" not in shown


@pytest.mark.parametrize("value", ["https://h/x\n", "https://h/\x1b[2Jx", "a\u2028b", "x" * 5000])
def test_a_setting_with_a_control_character_or_too_long_is_refused_unquoted(value: str) -> None:
    with pytest.raises(UsageError) as err:
        redact.setting("ROCM_VLLM_INDEX_URL", value)
    assert "ROCM_VLLM_INDEX_URL" in err.value.message and value not in err.value.message
    assert err.value.hint


@given(
    st.text(max_size=80), st.text(alphabet="abcdefghijklmnop0123456789", min_size=6, max_size=20)
)
def test_no_secret_survives_in_userinfo_or_query(prefix: str, secret: str) -> None:
    for raw in (f"https://u:{secret}@h/{prefix}", f"https://h/p?k={secret}", f"u:{secret}@h"):
        shown = redact.url(raw)
        assert f":{secret}@" not in shown and f"={secret}" not in shown
        assert "\n" not in shown and "\r" not in shown
