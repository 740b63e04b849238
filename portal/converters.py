"""URL path converters."""

from django.urls import register_converter


class SignedTokenConverter:
    """A signed token (``payload:timestamp:signature``): URL-safe characters and colons,
    nothing else, so a NUL byte or a slash never reaches the database."""

    regex = r"[-a-zA-Z0-9_:]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(SignedTokenConverter, "signed")
