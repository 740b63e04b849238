"""Password hashers."""

from django.contrib.auth.hashers import Argon2PasswordHasher


class CheapArgon2PasswordHasher(Argon2PasswordHasher):
    """Argon2 with minimal cost, for the test suite only (the algorithm is the same;
    each hash records its own parameters, so production hashes still verify)."""

    time_cost = 1
    memory_cost = 1024
    parallelism = 1
