"""The customer API, ``/api/v1/`` (Django REST framework + drf-spectacular).

Views parse input, call the same services and selectors as the pages, and serialise.
``auth`` (Bearer API keys, scopes), ``problems`` (RFC 9457 errors), ``base`` (rate limits,
idempotency, the audit of writes), ``pagination`` (cursors), ``serializers``, ``views/``
(one module per resource family), ``schema`` (OpenAPI and its docs pages), ``urls``.
"""
