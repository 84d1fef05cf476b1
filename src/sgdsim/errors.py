"""User-facing errors: every one of them prints as a single line and exits with code 2."""


class SgdsimError(Exception):
    """Base class for errors caused by user input (files, options, configurations)."""


class ProfileError(SgdsimError):
    """A profile file is malformed: the message names the op and the field."""


class ConfigError(SgdsimError):
    """An impossible or unsupported configuration (option combination, unit, value)."""
