"""Credentials are never shown: one place that turns a URL, a setting or an error's text into
what may be printed, logged, put into JSON or written into a generated file.

Sites reach Artifactory, Nexus and Harbor mirrors with ``https://user:token@host/...`` or a token
in the query, and a token file with Windows line endings leaves ``\\r\\n`` in ``GITHUB_TOKEN``.
``url`` replaces the userinfo and every query value with ``***`` (a base URL's query is never
needed to say which server was asked); ``text`` does the same to every URL inside free text (an
exception's message quotes the URL it failed on) and hides known secrets; both escape control
characters, so that a line break from a setting cannot forge an ``error:`` line. ``setting``
refuses a URL setting that carries one, naming the setting, never its value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from resolver.util.errors import UsageError

HIDDEN: Final = "***"
MAX_SHOWN: Final = 200  # a URL longer than this is cut when shown: no message needs more
MAX_SETTING: Final = 2048  # a base URL longer than this is no base URL

# Patterns, compiled by ``re`` on first use (its cache): a check imports this module for one
# URL and matches none of them.
# C0/C1 controls, DEL, line and paragraph separators, bidi overrides and isolates, lone
# surrogates, the BOM: what breaks a line or reorders what a reader sees (as util.safety).
_CONTROL: Final = "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]"
# A URL inside free text, up to the first character no URL in a message carries.
_URL_IN_TEXT: Final = r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()\[\]{},]*"
# A path with a query inside free text (urllib3: "Max retries exceeded with url: /x?token=...").
_QUERY_IN_TEXT: Final = r"\?[^\s'\"<>()]+"


def _escape(text: str) -> str:
    return re.sub(
        _CONTROL,
        lambda m: (
            f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"
        ),
        text,
    )


def _hide_query(query: str) -> str:
    """``a=1&token=x`` -> ``a=***&token=***``: a value may be a token whatever its key says."""
    return "&".join(
        f"{key}={HIDDEN}" if sep else HIDDEN if key else ""
        for key, sep, _value in (part.partition("=") for part in query.split("&"))
    )


def _hide(raw: str) -> str:
    scheme, sep, rest = raw.partition("://")
    if not sep:
        scheme, rest = "", raw  # HOST[:PORT][/PREFIX], as --registry-mirror takes it
    end = len(rest)
    for stop in "/?#":
        found = rest.find(stop)
        if found != -1:
            end = min(end, found)
    authority, tail = rest[:end], rest[end:]
    if "@" in authority:
        authority = f"{HIDDEN}@{authority.rpartition('@')[2]}"
    tail, _, _fragment = tail.partition("#")  # a fragment never reaches the server: not shown
    path, qmark, query = tail.partition("?")
    shown = (f"{scheme}://" if sep else "") + authority + path
    return shown + (f"?{_hide_query(query)}" if qmark else "")


def url(raw: str) -> str:
    """``raw`` (a URL, or what a user gave as one) as it may be shown: userinfo and query
    values replaced by ``***``, the fragment dropped, control characters escaped, cut at
    ``MAX_SHOWN`` characters."""
    shown = _escape(_hide(raw))
    return shown if len(shown) <= MAX_SHOWN else shown[:MAX_SHOWN] + "..."


def has_credentials(raw: str) -> bool:
    """``raw`` carries a userinfo part or a query (what ``url`` hides)."""
    return _hide(raw) != raw.partition("#")[0]


def without_credentials(raw: str) -> str:
    """``raw`` with its userinfo and query removed: the URL a printed command may carry (the
    tool that runs it reads the credentials from its own netrc or keyring)."""
    scheme, sep, rest = raw.partition("://")
    if not sep:
        return raw.partition("?")[0].partition("#")[0]
    authority, slash, path = rest.partition("/")
    host = authority.rpartition("@")[2].partition("?")[0].partition("#")[0]
    return f"{scheme}://{host}" + (
        slash + path.partition("?")[0].partition("#")[0] if slash else ""
    )


def split_userinfo(raw: str) -> tuple[str, tuple[str, str] | None]:
    """``https://user:token@host/path`` -> (``https://host/path``, (user, token)), the parts
    percent-decoded as a browser would; a URL without userinfo comes back as it is, with None.
    The caller sends the pair as HTTP auth and shows, logs and records only the URL."""
    from urllib.parse import unquote

    scheme, sep, rest = raw.partition("://")
    if not sep:
        return raw, None
    end = min((i for i in (rest.find(c) for c in "/?#") if i != -1), default=len(rest))
    authority = rest[:end]
    if "@" not in authority:
        return raw, None
    userinfo, _, host = authority.rpartition("@")
    user, _, password = userinfo.partition(":")
    return f"{scheme}://{host}{rest[end:]}", (unquote(user), unquote(password))


def text(message: str, secrets: Iterable[str | None] = ()) -> str:
    """Free text (an exception's message) as it may be shown: every URL in it through ``url``,
    every query hidden, each of ``secrets`` (and its stripped form) replaced by ``***``, control
    characters escaped."""
    for secret in secrets:
        if not secret:
            continue
        # As given, stripped, as repr() quotes it (an error naming a header value with CR/LF),
        # and each run between control characters.
        forms = {secret, secret.strip(), repr(secret)[1:-1], *re.split(_CONTROL, secret)}
        for form in sorted(forms, key=len, reverse=True):
            if len(form.strip()) >= 4:  # a shorter "secret" would hide ordinary words
                message = message.replace(form, HIDDEN)
    message = re.sub(_URL_IN_TEXT, lambda m: _hide(m.group()), message)
    message = re.sub(_QUERY_IN_TEXT, lambda m: f"?{_hide_query(m.group()[1:])}", message)
    return _escape(message)


def has_control(value: str) -> bool:
    """``value`` carries a character ``url`` and ``text`` would escape."""
    return re.search(_CONTROL, value) is not None


def setting(name: str, value: str) -> str:
    """``value`` of the URL setting ``name`` (an environment variable or a flag), refused with a
    one-line ``UsageError`` when it carries a control character or is absurdly long; the
    message names the setting and the character, never the value."""
    found = re.search(_CONTROL, value)
    if found is not None:
        raise UsageError(
            f"{name} carries a control character (U+{ord(found.group()):04X})",
            hint=f"set {name} to one URL on one line (a file read into it may end in CR/LF)",
        )
    if len(value) > MAX_SETTING:
        raise UsageError(
            f"{name} is {len(value)} characters long, more than a URL needs ({MAX_SETTING})",
            hint=f"set {name} to the base URL of one server",
        )
    return value


def base_url(name: str, value: str) -> tuple[str, tuple[str, str] | None]:
    """The base URL setting ``name`` split into the URL to use and show and its login (or
    None); refused (``setting``) with a control character, and with a query or fragment: every
    request path is appended to a base URL, so a query there would end up in each request and
    in every record that names where a fact was read."""
    clean, auth = split_userinfo(setting(name, value))
    if "?" in clean or "#" in clean:
        raise UsageError(
            f"{name} {url(value)}: a base URL carries no query or fragment",
            hint=f"set {name} to the server's base URL; a login goes in user:token@ (sent as "
            "HTTP auth, never shown) or ~/.netrc",
        )
    return clean, auth
